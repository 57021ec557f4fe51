"""Fixtures set up under ``--benchmark-timeout`` without breaking pytest's fixture state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _pytest
import pluggy
import pytest
from _pytest.outcomes import Failed  # pytest.fail.Exception, as a class to derive from

from pytest_benchmarks.engine.deadline import fixture_setup

#: Where pytest's fixture machinery runs: the time limit never interrupts code in these folders.
MACHINERY = tuple(str(Path(str(module.__file__)).parent) for module in (_pytest, pluggy))


class FixtureTimeout(Failed):
    """Stops a fixture's code when ``--benchmark-timeout`` expires: an outcome exception, which
    pytest records as the fixture's error and a loader's ``except Exception`` cannot swallow."""


def fixture_value(request: pytest.FixtureRequest, name: str) -> Any:
    """``request.getfixturevalue(name)``: a limit that expires while the fixture is built fails
    it as a fixture error pytest records, then raises TaskTimeout here."""
    with fixture_setup(MACHINERY, FixtureTimeout):
        return request.getfixturevalue(name)
