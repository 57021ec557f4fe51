"""A ``lerobot_env_*`` plugin from PyPI through the harness: lerobot-env-so101 (SO-101 in MuJoCo,
env type ``so101``), found by LeRobot's plugin discovery and made by its own config, driven by
the package's scripted reach-and-close controller as a ``module:`` policy."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("lerobot.envs.configs", reason="LeRobot is not installed")
pytest.importorskip("lerobot_env_so101", reason="pytest-benchmarks[so101] is not installed")

ROOT = Path(__file__).parents[3]
#: The package's controller, a pure function of the 17 state values (agent_pos, then the
#: block's position), as a policy of the harness.
POLICY = """
import numpy as np
from lerobot_env_so101.scripted import scripted_reach_close

class ReachClose:
    def __init__(self, config, num_envs):
        pass
    def reset(self, slots, seeds):
        pass
    def act(self, batch):
        flat = np.concatenate([batch["observation.state"], batch["observation.environment_state"]], 1)
        return np.stack([scripted_reach_close(row) for row in flat]).astype(np.float32)
    def identity(self):
        return {"source": "module", "id": "lerobot_env_so101.scripted_reach_close", "revision": None}

def reach_close(config, num_envs):
    return ReachClose(config, num_envs)
"""


def test_so101_runs_with_the_same_records_at_every_batch_size(pytester: pytest.Pytester):
    """The page's command at batch sizes 1 and 2: the same records. (A lerobot: env type under
    xdist workers is the page's first command, run by ``test_lerobot_envs``.)"""
    pytester.makepyfile(mypolicies=POLICY)
    pytester.makepyfile(test_arm="import pytest\n"
                                   "pytestmark = pytest.mark.benchmark_env('lerobot:so101')\n"
                                   "def test_rollout(evaluate):\n    evaluate()\n")  # fmt: skip
    page = (ROOT / "docs" / "benchmarks" / "lerobot.md").read_text()
    (block,) = [b for b in page.split("```bash\n")[1:] if "lerobot:so101" in b.split("```")[0]]
    command = shlex.split(block.split("\n```")[0])
    assert command[:2] == ["pytest", "benchmarks"]
    args = ["-p", "no:cacheprovider", *command[2:], "--benchmark-episodes=4",
            "--benchmark-max-steps=20"]  # fmt: skip
    found = []
    for batch in (1, 2):
        pytester.runpytest(*args, f"--benchmark-batch-size={batch}").assert_outcomes(passed=1)
        document = json.loads((pytester.path / "benchmark-results" / "metrics.json").read_text())
        (row,) = document["results"]
        assert row["id"] == "lerobot:so101/so101/0" and row["error"] is None
        found.append([(e["seed"], e["success"], e["steps"], e["sum_reward"])
                      for e in row["episodes"]])  # fmt: skip
    assert found[0] == found[1]
    assert [seed for seed, *_ in found[0]] == [1000, 1001, 1002, 1003]


def test_so101_pick_place_is_one_line_since_lerobots_config_cannot_make_it(
    pytester: pytest.Pytester,
):
    """lerobot-env-so101 0.4.0's config hands ``reward_type`` to every task's ``gym.make``, which
    its pick-and-place env does not take: ``lerobot-eval --env.type=so101
    --env.task=SO101PickPlace-v0`` fails the same way. Said in one line, naming it."""
    pytester.makepyfile(test_arm="import pytest\n"
                                   "pytestmark = pytest.mark.benchmark_env('lerobot')\n"
                                   "def test_rollout(evaluate):\n    evaluate()\n")  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-env=lerobot:so101",
                                "--benchmark-task=SO101PickPlace-v0")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --benchmark-task: lerobot:so101: 'SO101PickPlace-v0' is "
                                 "no task here and LeRobot makes no env of it (create_envs: "
                                 "TypeError: *unexpected keyword argument 'reward_type'*"])  # fmt: skip


class _Reporting(gym.Env[np.ndarray, np.ndarray]):
    """Reports success under one key at its third step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
    action_space = gym.spaces.Box(-1.0, 1.0, (1,))

    def __init__(self, key: str) -> None:
        self.key, self.steps = key, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self.steps, self.options = 0, options
        return np.zeros(1, np.float32), {}

    def step(self, action: np.ndarray) -> Any:
        self.steps += 1
        return np.zeros(1, np.float32), 0.0, self.steps == 3, False, {self.key: self.steps == 3}


@pytest.mark.parametrize("key", ["is_success", "succeed"])
def test_success_is_lerobots_is_success_or_gym_hils_succeed(key: str):
    """so101's env says ``succeed`` (gym-hil's key), not LeRobot's ``is_success``: the harness
    reads either; a reset carries LeRobot's "a new rollout" option, not the harness's own."""
    from lerobot.envs.utils import NEW_ROLLOUT_OPTION

    from pytest_benchmarks.envs.lerobot.env import HarnessProtocol

    env = HarnessProtocol(_Reporting(key))
    env.reset(seed=3, options={"init_state": 2, "index": 2})
    assert env.unwrapped.options == {NEW_ROLLOUT_OPTION: True}
    flags = [env.step(np.zeros(1, np.float32))[4]["success"] for _ in range(3)]
    assert flags == [False, False, True]
