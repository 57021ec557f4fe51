"""The pytest plugin (the ``pytest11`` entry point): everything here knows pytest.

Its hooks live in ``hooks`` and its fixtures in ``fixtures``; both hand off to plain modules in
the layers below (core, engine, metrics).
"""

from pytest_benchmarks.plugin import starting

starting.guard()  # before the imports below: a Ctrl-C while they run is one line

pytest_plugins = ["pytest_benchmarks.plugin.hooks", "pytest_benchmarks.plugin.fixtures"]
