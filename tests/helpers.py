"""Helpers the plugin's tests import: the toy project's files and readers of metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent

#: What an xdist worker exports to its children; pytest-benchmark reads it as "xdist is on",
#: so a session a test starts under xdist drops them to time anything.
XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")

#: conftest for pytester sessions that also registers the toy benchmark.
TOY_CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import toybench  # noqa: F401  (registers "toy" and "absent")
"""

TOY_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    result = evaluate()
    assert result.error is None and result.n_episodes == result.planned

def test_success_rate(evaluate):
    assert evaluate().successes > 0
"""


def read_metrics(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def outcomes(document: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Per task id, the episodes without timing: equal for equal deterministic runs."""
    return {
        row["id"]: [
            tuple(
                v for k, v in sorted(e.items()) if k not in ("duration_s", "video", "video_error")
            )
            for e in row["episodes"]
        ]
        for row in document["results"]
    }


#: LIBERO episodes on which two ways of running the same env are compared step for step:
#: (task, whether the expert acts (else random actions), steps per episode).
LIBERO_SIDE_BY_SIDE = [
    # The expert grasps, carries and places a bowl: contacts, a moving object.
    ("libero_spatial/0", True, 300),
    # A stove and a cabinet with a drawer (articulated fixtures), pushed about at random.
    ("libero_goal/2", False, 80),
]
