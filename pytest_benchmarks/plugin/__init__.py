"""The pytest plugin (the ``pytest11`` entry point): everything here knows pytest.

Its hooks live in ``hooks`` and its fixtures in ``fixtures``; both hand off to plain modules in
the layers below (core, engine, metrics).
"""

pytest_plugins = ["pytest_benchmarks.plugin.hooks", "pytest_benchmarks.plugin.fixtures"]
