"""pytest-benchmark's file options checked when the session starts, not when it ends.

pytest-benchmark opens ``--benchmark-json`` and gives up on ``--benchmark-compare-fail`` only
after every test has run: a folder that does not exist ends a long run in a traceback, and a
saved run it cannot read (a truncated file) in a usage error, the timings lost. Both are known
before the first test; each is one line then.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks.metrics.gate.refusals import printable

#: The name pytest-benchmark registers its session under (``config.pluginmanager``).
SESSION = "pytest-benchmark"


def check(config: pytest.Config) -> None:
    """``pytest.UsageError`` (one line) for a ``--benchmark-json`` in a folder that does not
    exist (or that is a folder) or a ``--benchmark-compare-fail`` with no saved run to compare
    against."""
    session = config.pluginmanager.get_plugin(SESSION)
    if session is None or getattr(session, "disabled", False):
        return
    path = config.getoption("benchmark_json", None)
    if path is not None:
        _check_json(Path(path))
    if config.getoption("benchmark_compare_fail", None) and not session.compared_mapping:
        raise pytest.UsageError(_nothing_to_compare(session, config))


def _check_json(path: Path) -> None:
    folder = path.parent
    if path.is_dir():
        raise pytest.UsageError(f"--benchmark-json: {path} is a directory; give a file's path")
    if not folder.is_dir():
        raise pytest.UsageError(
            f"--benchmark-json: {path}: the folder {folder} does not exist; create it or give "
            "a path in an existing folder"
        )


def _nothing_to_compare(session: Any, config: pytest.Config) -> str:
    """Why pytest-benchmark has no saved run to compare against: the file it could not read,
    or none saved that matches."""
    compare = config.getoption("benchmark_compare", None)
    if not compare:  # pytest-benchmark's default is [], and a bare flag True
        return (
            "--benchmark-compare-fail: needs --benchmark-compare (the latest saved run) or "
            "--benchmark-compare=NUM (run NUM) to compare against"
        )
    # pytest-benchmark's own glob for "the latest saved run" where no run is named.
    globs = ("[0-9][0-9][0-9][0-9]_",) if compare is True else (str(compare),)
    try:
        saved = list(session.storage.query(*globs))
    except ValueError as exc:  # a --benchmark-compare that is no file and no glob
        return f"--benchmark-compare: {printable(exc)}"
    for found in saved:
        try:
            json.loads(Path(found).read_text(encoding="utf8"))["benchmarks"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            reason = printable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return (
                f"--benchmark-compare-fail: the saved run {found} cannot be read ({reason}); "
                "remove it or compare against another (--benchmark-compare=ID)"
            )
    which = "" if compare is True else f" matching {printable(globs[0])}"
    return (
        f"--benchmark-compare-fail: there is no saved run{which} in {session.storage} to compare "
        "against; save one first (--benchmark-autosave)"
    )
