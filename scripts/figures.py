"""The timings the docs quote, kept in one place: ``docs/figures.toml``.

    .venv/bin/python scripts/figures.py --check

Each figure there names the pages that quote it, the text they quote (line breaks as the page
wraps them), the command that measured it, the machine and the day. ``--check`` fails (exit 1,
one line each) where a page does not quote a figure's text, or quotes a timing (``N s``,
``N minutes``, ``a minute and a half``) that no figure holds: a figure measured again is
changed in the file and on its pages together, never on a page alone. Without ``--check`` it
prints the figures and how each was measured.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures.toml"

#: What reads as a timing on a page: a number of seconds or minutes, or minutes in words.
TIMING = re.compile(
    r"\b(?:about |under |over )?(?:\d+(?:\.\d+)?(?: to \d+(?:\.\d+)?)?|a|half a|one|two|"
    r"a minute and a half)\s+(?:s|seconds?|minutes?|hours?)\b(?! of)",
    re.IGNORECASE,
)

#: Pages whose timings must all be figures (the others quote measurements with their own
#: context: the performance and statistics pages give their commands beside each table).
PAGES = ("README.md", "docs/index.md")


def load(path: Path = FIGURES) -> dict[str, dict[str, object]]:
    """The figures by name."""
    figures: dict[str, dict[str, object]] = tomllib.loads(path.read_text())
    return figures


def problems(figures: dict[str, dict[str, object]], root: Path = ROOT) -> list[str]:
    """Each figure a page does not quote, and each timing on a page that no figure holds."""
    found = []
    quoted: dict[str, list[str]] = {}
    for name, figure in figures.items():
        text = str(figure["text"])
        for page in figure["pages"]:  # type: ignore[attr-defined]
            if not (root / page).is_file():
                found.append(f"{page}: no such page, named by figure {name}")
                continue
            content = (root / page).read_text()
            if _flat(text) not in _flat(content):
                found.append(f"{page}: does not quote figure {name} ({_flat(text)!r})")
            quoted.setdefault(page, []).append(_flat(text))
    for page in (page for page in PAGES if (root / page).is_file()):
        content = _flat((root / page).read_text())
        for match in TIMING.finditer(content):
            if not any(match.group(0) in text for text in quoted.get(page, [])):
                found.append(
                    f"{page}: quotes a timing that docs/figures.toml does not hold "
                    f"({match.group(0)!r}); add it there with how it was measured"
                )
    return found


def _flat(text: str) -> str:
    """Text with its line breaks (a page's wrapping) as spaces."""
    return re.sub(r"\s+", " ", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail where a page and the file differ"
    )
    args = parser.parse_args(argv)
    figures = load()
    if args.check:
        found = problems(figures)
        for line in found:
            print(f"figures: {line}", file=sys.stderr)
        return 1 if found else 0
    for name, figure in figures.items():
        print(f"{name}: {_flat(str(figure['text']))} ({figure['measured']}; {figure['on']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
