"""Write the options table of docs/options.md and the run block's options in the metrics JSON
Schema from the option registry (``pytest_benchmarks.core.settings.OPTIONS``, which ``pytest
--help``, the API's keywords and the CLI's gate options also come from), so neither can drift.

    python scripts/options_page.py          # rewrite the table and the schema's run block
    python scripts/options_page.py --check  # exit 1, naming each file, when one is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pytest_benchmarks.core.settings import OPTIONS
from pytest_benchmarks.metrics import run_schema

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "options.md"
SCHEMA = ROOT / "pytest_benchmarks" / "metrics" / "schema" / "metrics.schema.json"
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
    stale = 0
    for path, render in [(PAGE, rendered), (SCHEMA, schema_text)]:
        old = path.read_text()
        new = render(old)
        if args.check and new != old:
            print(f"{path}: out of date with the option registry: python scripts/options_page.py")
            stale = 1
        elif new != old:
            path.write_text(new)
    return stale


def schema_text(text: str) -> str:
    """The metrics JSON Schema with its run block's options from the registry."""
    return run_schema.dumps(run_schema.rendered(json.loads(text))) + "\n"


if __name__ == "__main__":
    sys.exit(main())
