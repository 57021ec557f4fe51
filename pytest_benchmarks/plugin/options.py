"""The ``--benchmark-*`` options and ini keys, registered and read from the option registry
(``core.settings.OPTIONS``); every value is checked there (one line naming the option and what
is valid), before any test is collected or any simulator is built."""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_benchmarks.core.selection import Selection, select
from pytest_benchmarks.core.settings import OPTIONS, Settings
from pytest_benchmarks.core.validation import OptionError, check_metrics_path, check_record_path
from pytest_benchmarks.core.validation import settings as validate

GROUP = "benchmarks"
GROUP_HELP = "robot-policy simulation benchmarks (pytest-benchmarks)"


def add_options(parser: pytest.Parser) -> None:
    """Register the options in their own ``--help`` group, beside pytest-benchmark's; each also
    reads the ini key of its name with underscores."""
    group = parser.getgroup(GROUP, GROUP_HELP)
    for option in OPTIONS:
        if option.is_flag:
            group.addoption(
                option.flag, dest=option.dest, action="store_true", default=None, help=option.help
            )
            parser.addini(option.dest, f"like {option.flag}", type="bool", default=False)
        else:
            group.addoption(
                option.flag, dest=option.dest, default=None, metavar=option.metavar,
                help=option.help,
            )  # fmt: skip
            parser.addini(option.dest, option.help, type="string", default=None)


def ini_name(config: pytest.Config, flag: str) -> str:
    """How an error names an option whose value came from the ini file: the key and the file."""
    dest = next(option.dest for option in OPTIONS if option.flag == flag)
    return f"{dest} (ini key for {flag}, in {config.inipath})"


def from_ini(config: pytest.Config, flag: str, error: str) -> str:
    """``error`` (which starts with the flag's name) naming the ini key and file instead."""
    return ini_name(config, flag) + error.removeprefix(flag)


def read(config: pytest.Config, sources: set[str] | None = None) -> dict[str, Any]:
    """Each option's raw value, the command line before the ini file; unset options left out.
    ``sources`` receives the flags whose value came from the ini file."""
    raw: dict[str, Any] = {}
    for option in OPTIONS:
        value = config.getoption(option.dest)
        if option.is_flag:
            # Set on the command line, else the ini file's spelling (true, no, ...) or unset.
            if value:
                raw[option.flag] = True
                continue
            try:
                raw[option.flag] = config.getini(option.dest) or False
            except (ValueError, pytest.UsageError) as exc:  # a bool pytest cannot read ("maybe")
                raise OptionError(
                    f"{ini_name(config, option.flag)}: {exc}; give true or false"
                ) from None
            if raw[option.flag] and sources is not None:
                sources.add(option.flag)
            continue
        if isinstance(value, str) and not value.strip():
            raise OptionError(f"{option.flag}: empty value; give one, or leave the option out")
        if value is None:
            value = config.getini(option.dest)  # unset in the ini file: ""
            if value and sources is not None:
                sources.add(option.flag)
            if option.ini_path and value and config.inipath is not None:
                # As pytest does for its own ini paths: relative to the ini file's directory.
                value = str(config.inipath.parent / os.path.expanduser(value))
        if value not in ("", None):
            raw[option.flag] = value
    return raw


def load(config: pytest.Config, check_metrics: bool) -> tuple[Settings, Selection]:
    """The session's settings and selection; pytest.UsageError with one line if anything is bad.

    ``check_metrics``: this process writes the metrics file (the controller), so check it now.
    """
    sources: set[str] = set()
    try:
        options = validate(read(config, sources), config.rootpath)
        if options.sequential and config.getoption("update_snapshots", False):
            raise OptionError(
                "--benchmark-sequential: judges a run against its snapshots, and stops each task "
                "when decided; --snapshot-update stores snapshots from whole runs: drop one"
            )
        if check_metrics:
            check_metrics_path(options.metrics)
            check_record_path(options.record, options.resume)
        return options, select(options)
    except OptionError as exc:
        error = str(exc)
        flag = next((f for f in sorted(sources) if error.startswith(f"{f}:")), None)
        if flag is not None:
            error = from_ini(config, flag, error)
        raise pytest.UsageError(error) from None
