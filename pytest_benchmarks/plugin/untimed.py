"""Speed tests under xdist: pytest-benchmark times nothing there and says so in its own words,
in a warning after the run; this plugin says it once, at session start, with the command that
times them."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, cast

import pytest

#: The start of pytest-benchmark's warning (pytest_benchmark.session).
MESSAGE = "Benchmarks are automatically disabled because xdist"


def under_xdist(config: pytest.Config) -> bool:
    """A worker, or a controller that starts workers."""
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def timing_on(config: pytest.Config) -> bool:
    """pytest-benchmark is loaded and neither skips nor disables its benchmarks."""
    if not config.pluginmanager.hasplugin("benchmark"):  # its entry point's name
        return False
    skip = config.getoption("benchmark_skip", False)
    return not skip and not config.getoption("benchmark_disable", False)


def silence(config: pytest.Config) -> Callable[[], None]:
    """Drop pytest-benchmark's xdist warning in this process (it is issued at unconfigure,
    outside pytest's own warning capture); returns what restores the filters."""
    if not (under_xdist(config) and timing_on(config)):
        return lambda: None
    from pytest_benchmark.logger import PytestBenchmarkWarning

    saved = list(warnings.filters)
    warnings.filterwarnings("ignore", message=MESSAGE, category=PytestBenchmarkWarning)

    def restore() -> None:
        cast(list[Any], warnings.filters)[:] = saved  # a list, typed as a sequence

    return restore


def header_line(config: pytest.Config) -> str | None:
    """The controller's line about untimed speed tests, or None when they are timed."""
    if hasattr(config, "workerinput") or not (under_xdist(config) and timing_on(config)):
        return None
    return (
        "speed tests (test_policy_latency, test_env_step) run once, untimed, under xdist; "
        "time them with: pytest benchmarks --benchmark-only -p no:xdist"
    )
