"""Keep the package's functions and modules short enough to read whole: no function over
``FUNCTION_LINES`` lines (its ``def`` to its last line, decorators left out) and no module over
``MODULE_LINES``.

    python scripts/sizes.py   # prints each one over; exit 1 if there is any

A function waived in ``WAIVED`` is left out while it is over; a waiver that no longer matches a
function over the limit is itself a finding, so it is taken off once the function is split.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_benchmarks"
FUNCTION_LINES = 80
MODULE_LINES = 450

#: (path from the package's parent, qualified name) of functions left over the limit for now.
WAIVED: frozenset[tuple[str, str]] = frozenset()


type Function = ast.FunctionDef | ast.AsyncFunctionDef


def functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """Every function and method under ``node``, nested ones too, by qualified name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + child.name, child
            yield from functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, f"{prefix}{child.name}.")
        else:
            yield from functions(child, prefix)


def oversized(package: Path = PACKAGE, waived: Collection[tuple[str, str]] = WAIVED) -> list[str]:
    """One line per module over ``MODULE_LINES`` and function over ``FUNCTION_LINES`` under
    ``package`` (paths from its parent), and per waiver that matches none of them."""
    found: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            found.append(f"{name}: {lines} lines (at most {MODULE_LINES})")
        for qualified, node in functions(ast.parse(text, filename=name)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length <= FUNCTION_LINES:
                continue
            if (name, qualified) in waived:
                used.add((name, qualified))
                continue
            found.append(
                f"{name}:{node.lineno}: function {qualified} is {length} lines "
                f"(at most {FUNCTION_LINES})"
            )
    for name, qualified in sorted(set(waived) - used):
        found.append(
            f"{name}: waived function {qualified} is not over {FUNCTION_LINES} lines (or is "
            "gone): take it off WAIVED in scripts/sizes.py"
        )
    return found


def main() -> int:
    found = oversized()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
