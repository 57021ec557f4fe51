"""Find import circles inside the package, the lazy ones too (imports inside functions, which
import-linter's layer contract does not see); imports under ``if TYPE_CHECKING:`` never run
and are left out.

    python scripts/import_cycles.py   # prints each circle; exit 1 if there is any
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "pytest_benchmarks"
ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Line numbers of the statements inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(path: Path, modules: set[str], root: Path = ROOT) -> set[str]:
    """The package's modules that ``path`` imports, wherever the import statement stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & modules
            found.update(submodules)
            if len(submodules) < len(node.names):  # names defined in the module itself
                found.add(base)
    # A module's own packages are imported before it whatever it says: no edge of its own.
    ancestors = {here.rsplit(".", n)[0] for n in range(1, here.count(".") + 1)}
    return {name for name in found if name in modules and name != here and name not in ancestors}


def graph() -> dict[str, set[str]]:
    paths = sorted((ROOT / PACKAGE).rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports(p, modules) for p in paths}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def main() -> int:
    found = cycles(graph())
    for component in found:
        print(f"import circle: {' <-> '.join(component)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
