"""Parity with LeRobot's own evaluation on ALOHA and PushT: the same checkpoint, task and seed
give the same observations and actions, step for step, through this harness (``lerobot``
layout; PushT's keypoints through ``state``) and through LeRobot's env factory
(``make_env`` on its ``AlohaEnv``/``PushtEnv`` config, gym-aloha's and gym-pusht's own envs) and
``lerobot_eval.rollout``. Both sides run unmodified code; LeRobot's side is told only how many
steps to take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.policies import make_policy

pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")
for _benchmark in ("aloha", "pusht"):
    if catalog.get(_benchmark).missing():
        pytest.skip(catalog.get(_benchmark).missing(), allow_module_level=True)

import lerobot_models  # noqa: E402

lerobot_models.preload()

SEED = 1000
STEPS = 10
#: (benchmark, task, observation mode, image size, the checkpoint's inputs, action size).
#: The harness clips a LeRobot policy's actions to the action space (ALOHA's joint ranges lie
#: within [-pi, pi]; PushT's board is [0, 512]), lerobot-eval does not: PushT's checkpoints
#: aim at the board's middle, so the two agree (no action of theirs is clipped, checked below).
CASES = {
    # LeRobot's ALOHA renders 480x640 whatever it is told.
    "aloha": ("aloha", "AlohaTransferCube-v0", "lerobot", (480, 640),
              {"observation.state": (14,), "observation.images.top": (3, 480, 640)}, 14),
    "pusht": ("pusht", "PushT-v0", "lerobot", (96, 96),
              {"observation.state": (2,), "observation.image": (3, 96, 96)}, 2),
    "pusht-keypoints": ("pusht", "PushT-v0", "state", (96, 96),
                        {"observation.state": (2,), "observation.environment_state": (16,)}, 2),
}  # fmt: skip


def harness(folder: Path, case: str, episode: int) -> dict[str, Any]:
    """Observations (in LeRobot's format) and actions of one episode through the harness."""
    name, task_name, obs, size, _, _ = CASES[case]
    benchmark = catalog.get(name)
    task = benchmark.select([task_name])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=1, sync=True, seed=SEED,
        policy=f"lerobot:{folder}", max_steps=STEPS, metrics=Path("m.json"), image_size=size,
        obs=None if obs == "lerobot" else obs,
    ).env_config(task)  # fmt: skip
    assert config.obs == obs  # lerobot: the default for a LeRobot policy
    processors = benchmark.processors(config)
    policy = make_policy(f"lerobot:{folder}", benchmark, config, 1, "cpu", processors.features)
    seen: dict[str, list[Any]] = {"observation": [], "action": [], "description": []}
    act = policy.act

    def recording_act(batch: dict[str, Any]) -> np.ndarray:
        seen["observation"].append(policy.observation(batch, 0))  # type: ignore[attr-defined]
        seen["description"].append(batch["task"][0])
        actions = act(batch)
        seen["action"].append(policy.last_raw[0].copy())  # type: ignore[attr-defined]
        return actions

    policy.act = recording_act  # type: ignore[method-assign]
    result = evaluate_task(
        LazyVectorEnv(benchmark, config, 1, sync=True), policy, processors=processors,
        seed=SEED, episodes=[episode], record=lambda r: None,
    )  # fmt: skip
    assert result.error is None, result.error
    seen["seed"] = result.episodes[0].seed
    seen["space"] = config.action_space
    return seen


def lerobot(folder: Path, case: str, seed: int) -> dict[str, Any]:
    """The same episode through LeRobot's env factory and lerobot-eval's rollout."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import AlohaEnv, PushtEnv
    from lerobot.envs.factory import make_env
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.processor.pipeline import PolicyProcessorPipeline
    from lerobot.scripts.lerobot_eval import rollout

    name, task_name, obs, _, _, _ = CASES[case]
    if name == "aloha":
        env_config: Any = AlohaEnv(task=task_name, episode_length=STEPS)
    else:
        obs_type = "environment_state_agent_pos" if obs == "state" else "pixels_agent_pos"
        env_config = PushtEnv(task=task_name, episode_length=STEPS, obs_type=obs_type)
    vector = make_env(env_config, n_envs=1)[env_config.type][0]
    config = PreTrainedConfig.from_pretrained(folder)
    config.device = "cpu"
    policy = get_policy_class(config.type).from_pretrained(folder, config=config).eval()
    pre, post = make_pre_post_processors(config, pretrained_path=str(folder))
    identity = PolicyProcessorPipeline(steps=[])
    torch.manual_seed(seed)  # the harness seeds each episode's torch RNG with its seed
    out = rollout(vector, policy, identity, PolicyProcessorPipeline(steps=[]), pre, post,
                  seeds=[seed], return_observations=True)  # fmt: skip
    vector.close()
    steps = out["action"].shape[1]
    observations = [{k: v[:, t] for k, v in out["observation"].items()} for t in range(steps)]
    return {"observation": observations, "action": out["action"][0].numpy()}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_lerobot_eval_step_for_step(case: str, tmp_path: Path):
    _, _, _, _, inputs, action_dim = CASES[case]
    scale = (256.0, 40.0) if case.startswith("pusht") else None
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=action_dim,
                                       action_scale=scale)  # fmt: skip
    ours = harness(folder, case, episode=2)
    theirs = lerobot(folder, case, ours["seed"])
    assert len(ours["action"]) == len(theirs["action"]) == STEPS
    for step, (mine, other) in enumerate(zip(ours["observation"], theirs["observation"],
                                             strict=True)):  # fmt: skip
        for key in inputs:
            assert torch.equal(mine[key], other[key]), f"step {step}: {key} differs"
    assert all(ours["space"].contains(a.astype(np.float32)) for a in theirs["action"])
    difference = np.abs(np.stack(ours["action"]) - theirs["action"]).max()
    print(f"{case}: {STEPS} steps, max |action difference| = {difference}")
    assert difference == 0.0
    # LeRobot's ALOHA and PushT envs carry no task description: LeRobot's layout's is empty.
    if CASES[case][2] == "lerobot":
        assert set(ours["description"]) == {""}
