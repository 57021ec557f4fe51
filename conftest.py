"""The project's shared test setup, for the plugin's tests (tests/) and the benchmark suite
(benchmarks/) alike: pytester, with which the plugin's tests run whole pytest sessions.

Strict markers are set in pyproject.toml (``strict_markers``); the plugin itself registers
through its ``pytest11`` entry point, as it does for every user.
"""

pytest_plugins = ["pytester"]
