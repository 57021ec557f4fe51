"""The run's fingerprint: what an outcome may hang on beside its settings."""

from __future__ import annotations

from importlib import metadata

from pytest_benchmarks.metrics import run_info
from pytest_benchmarks.metrics.gate.refusals import environment_changes


def test_a_package_that_is_not_installed_is_in_the_fingerprint_as_none():
    """So a snapshot made without a simulator says so when one is installed later."""
    absent = "pytest-benchmarks-no-such-simulator"
    found = run_info.fingerprint((absent, "numpy"), renders=False)
    assert found["packages"][absent] is None
    assert found["packages"]["numpy"] == metadata.version("numpy")
    assert "renderer" not in found
    assert "renderer" in run_info.fingerprint(("numpy",), renders=True)
    later = {**found, "packages": {**found["packages"], absent: "1.0"}}
    assert environment_changes(found, later) == [f"{absent} None → 1.0"]
