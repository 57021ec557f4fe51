"""Fixtures of the plugin's own tests (the project-wide setup is in the top-level conftest.py)."""

from __future__ import annotations

import pytest
from helpers import TOY_CONFTEST, TOY_TESTS


@pytest.fixture
def toy_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester project whose tests run the toy benchmark; every process its sessions start
    carries the project's path in ``TOY_RUN`` (see helpers.leftover_processes)."""
    monkeypatch.setenv("TOY_RUN", str(pytester.path))
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    return pytester
