"""Write the options table of docs/options.md from the option registry
(``pytest_benchmarks.core.settings.OPTIONS``, which ``pytest --help`` and the API's keywords
also come from), so the page cannot drift from either.

    python scripts/options_page.py          # rewrite the table in docs/options.md
    python scripts/options_page.py --check  # exit 1, naming the page, when it is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pytest_benchmarks.core.settings import OPTIONS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "options.md"
BEGIN, END = "<!-- options table: scripts/options_page.py -->", "<!-- end of options table -->"


def table() -> str:
    """One row per option: the flag with its value, its ini key, the keyword of
    ``pytest_benchmarks.api.evaluate`` that takes it, and its help."""
    rows = ["| option | ini key | API keyword | meaning |", "|---|---|---|---|"]
    for option in OPTIONS:
        shown = option.flag if option.is_flag else f"{option.flag} {option.metavar}"
        keyword = f"`{option.api}`" if option.api else ""
        text = option.help.replace("|", "\\|")
        rows.append(f"| `{shown.replace('|', '\\|')}` | `{option.dest}` | {keyword} | {text} |")
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
