"""The files a command writes: never one it reads, never two outputs in one file, and a clear
line (naming the flag) when a path cannot be written, before any work is done."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_benchmarks.core.files import check_writable
from pytest_benchmarks.metrics.runs import InputError


def output_path(path: Path, inputs: Sequence[Path | None] = (), flag: str = "") -> None:
    """A file the command may write: absent, or a regular file in a writable directory, and
    none of the command's ``inputs`` (writing it would replace what it reads)."""
    named = f"{flag}: {path}" if flag else str(path)
    try:
        check_writable(path)
    except OSError as exc:
        raise InputError(f"cannot write {named}: {exc}") from None
    for given in inputs:
        if given is not None and same_file(path, given):
            raise InputError(
                f"{named}: is also an input ({given}); writing it would replace what is read: "
                "give another output path"
            )


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links, or the same path where neither
    exists yet)."""
    with contextlib.suppress(OSError):
        if a.exists() and b.exists():
            return a.samefile(b)
    return a.resolve() == b.resolve()


def output_paths(outputs: Mapping[str, Path | None], inputs: Sequence[Path | None]) -> None:
    """Each given output (by its flag) writable and none of the ``inputs``, and no two the same
    file: the second would replace the first."""
    given = [(flag, path) for flag, path in outputs.items() if path is not None]
    for index, (flag, path) in enumerate(given):
        output_path(path, inputs, flag)
        for other, before in given[:index]:
            if same_file(path, before):
                raise InputError(f"{other} and {flag} name one file ({path}); give each its own")


#: What a ``--png`` chart can be drawn as, by file extension.
CHART_FORMATS = ("png", "svg", "pdf")


def chart_path(path: Path | None) -> None:
    """A ``--png`` path whose extension names a format the chart can be drawn in."""
    if path is not None and path.suffix.lower().lstrip(".") not in CHART_FORMATS:
        raise InputError(
            f"--png: {path}: unknown image format {path.suffix or '(no extension)'}; "
            f"valid: {', '.join('.' + f for f in CHART_FORMATS)}"
        )
