"""The project's shared test setup, for the plugin's tests (tests/) and the benchmark suite
(benchmarks/) alike: pytester, with which the plugin's tests run whole pytest sessions, and the
two tiers of the suite.

The quick tier is what ``pytest`` runs with no paths and no ``-m``: every test not marked
``e2e``. The end-to-end tier (``pytest -m e2e``) is the jobs a user runs whole: installs, the
train smoke, tox, the perf scripts, the README's LIBERO and speed commands, LeRobot's CI
commands and benchmarks/ (the main job).
Paths given on the command line run what they name, so ``pytest benchmarks`` stays the main job.

Strict markers are set in pyproject.toml (``strict_markers``); the plugin itself registers
through its ``pytest11`` entry point, as it does for every user.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    """With neither paths nor ``-m``, the quick tier: benchmarks/ is not even collected (its
    session would write the main job's metrics file, and its modules' names are the ones the
    plugin's tests give their own projects). Set here, in the controller, so that xdist hands
    the marker expression and the paths to its workers."""
    if config.args_source is pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr:
        config.option.markexpr = "not e2e"
        benchmarks = config.rootpath / "benchmarks"
        config.args = [arg for arg in config.args if Path(arg).resolve() != benchmarks]
