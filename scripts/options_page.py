"""Write the options table of docs/options.md from the options the plugin registers, the one
table in ``pytest_benchmarks.plugin.options``, so the page cannot drift from ``pytest --help``.

    python scripts/options_page.py          # rewrite the table in docs/options.md
    python scripts/options_page.py --check  # exit 1, naming the page, when it is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

from pytest_benchmarks.plugin.options import GROUP, add_options

PAGE = Path(__file__).resolve().parents[1] / "docs" / "options.md"
BEGIN, END = "<!-- options table: scripts/options_page.py -->", "<!-- end of options table -->"


def table() -> str:
    """One row per option: the flag with its value, its ini key, and its help."""
    parser = pytest.Parser(_ispytest=True)
    add_options(parser)
    rows = ["| option | ini key | meaning |", "|---|---|---|"]
    for option in parser.getgroup(GROUP).options:
        attrs = option.attrs()
        (flag,) = option.names()
        metavar = attrs.get("metavar")
        shown = (f"{flag} {metavar}" if metavar else flag).replace("|", "\\|")
        text = str(attrs["help"]).replace("|", "\\|")
        rows.append(f"| `{shown}` | `{attrs['dest']}` | {text} |")
    return "\n".join(rows)


def rendered(page: str) -> str:
    """``page`` with the block between the markers replaced by the current table."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(page):
        raise SystemExit(f"{PAGE}: no '{BEGIN}' ... '{END}' block")
    return pattern.sub(lambda _: f"{BEGIN}\n{table()}\n{END}", page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args()
    page = PAGE.read_text()
    new = rendered(page)
    if args.check:
        if new != page:
            print(f"{PAGE}: the options table is out of date: python scripts/options_page.py")
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
