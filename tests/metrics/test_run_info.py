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


def test_a_hostile_image_name_is_clipped_where_stored_and_escaped_where_printed(monkeypatch):  # type: ignore[no-untyped-def]
    """A container image name of a megabyte with ANSI escapes (PYTEST_BENCHMARKS_IMAGE): the
    fingerprint keeps its first 200 characters, which a snapshot can store and read back, and
    a change of environment prints it escaped and clipped."""
    import jsonschema

    from pytest_benchmarks.metrics.snapshots import SNAPSHOT_SCHEMA

    monkeypatch.setenv(run_info.IMAGE_VARIABLE, "\x1b[31mred" + "x" * 1_000_000)
    found = run_info.fingerprint(("numpy",), renders=False)
    assert len(found["container"]) == run_info.MAX_VALUE
    jsonschema.validate(found, SNAPSHOT_SCHEMA["properties"]["fingerprint"])
    (line,) = environment_changes({**found, "container": "docker"}, found)
    assert "\x1b" not in line and "\\x1b[31mred" in line and len(line) < 200
