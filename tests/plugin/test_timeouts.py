"""``--benchmark-timeout`` stops a task wherever it hangs (its policy's build, its env's
start-up, an episode, a speed test) and leaves pytest's own state intact, so every healthy
task beside it, before or after, on the same worker or another, still passes."""

from __future__ import annotations

import pytest
from helpers import HANG_TIMEOUT, read_metrics

#: A policy factory that hangs for one task (``walk``) and builds the toy's walker otherwise.
HANGING_BUILD = """
import time
import numpy as np

class Forward:
    def __init__(self, num_envs):
        self.num_envs = num_envs
    def reset(self, slots, seeds):
        pass
    def act(self, batch):
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "hanging", "revision": None}

def make(config, num_envs):
    if config.task.name == "walk":
        time.sleep(3600)
    return Forward(num_envs)

def swallowing(config, num_envs):
    # A factory that catches every Exception and keeps waiting, as careless loaders do.
    if config.task.name == "walk":
        for _ in range(36000):
            try:
                time.sleep(0.1)
            except Exception:
                pass
    return Forward(num_envs)
"""

SPEED_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    assert evaluate().error is None

def test_policy_latency(benchmark_speed, benchmark):
    benchmark_speed.policy_latency(benchmark)
"""


#: Where the hang is in the policy's build, the envs step in the session's process: the healthy
#: task's time within the limit is then its policy's and episodes', not env worker start-up
#: (slow under nested xdist on a loaded two-core machine).
IN_PROCESS = ("--benchmark-sync",)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-episodes=2", f"--benchmark-timeout={HANG_TIMEOUT}", *args,
        timeout=300,
    )  # fmt: skip


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    document = read_metrics(pytester.path / "benchmark-results" / "metrics.json")
    return {row["id"]: row for row in document["results"]}


def assert_pytest_intact(result: pytest.RunResult) -> None:
    out = result.stdout.str()
    assert "assert not self._finalizers" not in out and "INTERNALERROR" not in out, out


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize("factory", ["make", "swallowing"])
def test_a_policy_build_that_hangs_spares_the_next_task(
    toy_project: pytest.Pytester, workers: str, factory: str
):
    toy_project.makepyfile(hanging=HANGING_BUILD)
    result = run(
        toy_project, f"--benchmark-policy=module:hanging:{factory}",
        "--benchmark-task=walk,stroll", "-n", workers, *IN_PROCESS,
    )  # fmt: skip
    assert_pytest_intact(result)
    result.assert_outcomes(passed=2, failed=2)
    found = rows(toy_project)
    assert (
        found["toy/walk"]["error"]
        == f"TaskTimeout: toy/walk timed out after {HANG_TIMEOUT} s (--benchmark-timeout)"
    )
    assert found["toy/stroll"]["error"] is None and found["toy/stroll"]["n_episodes"] == 2


@pytest.mark.parametrize("workers", ["0", "2"])
def test_three_tasks_hanging_at_start_up_and_in_an_episode_beside_a_healthy_one(
    toy_project: pytest.Pytester, workers: str
):
    # slow-start hangs as its env is built, hang in its first episode; stroll runs between
    # them (-n 0) or beside them (-n 2).
    result = run(toy_project, "--benchmark-task=slow-start,stroll,hang", "-n", workers)
    assert_pytest_intact(result)
    result.assert_outcomes(passed=2, failed=4)
    found = rows(toy_project)
    for task in ("slow-start", "hang"):
        assert found[f"toy/{task}"]["error"].startswith(f"TaskTimeout: toy/{task} timed out")
    assert found["toy/stroll"]["error"] is None and found["toy/stroll"]["n_episodes"] == 2


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_speed_test_that_hangs_is_stopped_and_spares_the_next_task(
    toy_project: pytest.Pytester, workers: str
):
    toy_project.makepyfile(hanging=HANGING_BUILD, test_toy=SPEED_TESTS)
    result = run(
        toy_project, "--benchmark-policy=module:hanging:make", "--benchmark-task=walk,stroll",
        "-n", workers, "-k", "latency", *IN_PROCESS,
    )  # fmt: skip
    assert_pytest_intact(result)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*TaskTimeout: toy/walk timed out after {HANG_TIMEOUT} s*"])
