"""Parity with LeRobot's own evaluation: the same checkpoint, task, initial state and seed give
the same observations and actions, step for step, through this harness (``lerobot`` layout) and
through LeRobot's env wrapper and ``lerobot_eval.rollout``.

Both sides run unmodified code, LeRobot's envs built through their constructors and reset by
the rollout; the LeRobot side is only told the episode's seed (Meta-World's scene follows it in
LeRobot 0.6), LIBERO's initial state, and how many steps to take.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch._dynamo

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.policies import make_policy

pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

#: LeRobot's Meta-World wrapper renders 480x480 whatever it is given.
SIZE = 480
STEPS = 12
SEED = 1000


TOKENS = "observation.language.tokens"


def recording(pipeline: Any, tokens: list[Any]) -> Any:
    """``pipeline`` (a pre-processor), keeping the language tokens of each call's output."""

    def call(observation: dict[str, Any]) -> dict[str, Any]:
        out = pipeline(observation)
        if TOKENS in out:
            tokens.append(out[TOKENS].clone())
        return out

    return call


def build(kind: str, folder: Path, inputs: dict[str, tuple[int, ...]], action_dim: int,
          request: pytest.FixtureRequest) -> Path:  # fmt: skip
    """A checkpoint of ``kind``; SmolVLA's on the tiny local backbone, the pi0 family's with its
    tokenizer from a Hub cache, offline (and built and loaded inside ``small_pi``)."""
    extra = {}
    if kind == "smolvla":
        extra["vlm_model_name"] = str(request.getfixturevalue("vlm_backbone"))
    if kind in lerobot_models.PI_KINDS:
        request.getfixturevalue("offline_pi_tokenizer")
    return lerobot_models.checkpoint(kind, folder, inputs, action_dim=action_dim, **extra)


@contextmanager
def sized(kind: str) -> Iterator[None]:
    """The pi0 family at its test size (``lerobot_models.small_pi``); others as they are."""
    with lerobot_models.small_pi(kind) if kind in lerobot_models.PI_KINDS else nullcontext():
        yield


def harness(folder: Path, task_name: str, episode: int) -> dict[str, Any]:
    """Observations (in LeRobot's format) and actions of one episode through the harness."""
    benchmark = catalog.get("metaworld")
    task = benchmark.select([task_name])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=1, sync=True, seed=SEED,
        policy=f"lerobot:{folder}", max_steps=STEPS, metrics=Path("m.json"),
        image_size=(SIZE, SIZE),
    ).env_config(task)  # fmt: skip
    assert config.obs == "lerobot"  # the default for a LeRobot policy
    processors = benchmark.processors(config)
    policy = make_policy(f"lerobot:{folder}", benchmark, config, 1, "cpu", processors.features)
    seen: dict[str, list[Any]] = {"observation": [], "raw_action": [], "description": [],
                                  "tokens": []}  # fmt: skip
    act = policy.act
    policy.preprocessor = recording(policy.preprocessor, seen["tokens"])  # type: ignore[attr-defined]

    def recording_act(batch: dict[str, Any]) -> np.ndarray:
        seen["observation"].append(policy.observation(batch, 0))  # type: ignore[attr-defined]
        seen["description"].append(batch["task"][0])
        actions = act(batch)
        seen["raw_action"].append(policy.last_raw[0].copy())  # type: ignore[attr-defined]
        return actions

    policy.act = recording_act  # type: ignore[method-assign]
    env = LazyVectorEnv(benchmark, config, 1, sync=True)
    result = evaluate_task(
        env, policy, processors=processors, seed=SEED, episodes=[episode], record=lambda r: None
    )
    assert result.error is None and result.episodes[0].steps == STEPS
    seen["init_state"] = result.episodes[0].init_state
    seen["seed"] = result.episodes[0].seed
    return seen


def lerobot(folder: Path, task_name: str, seed: int) -> dict[str, Any]:
    """The same episode through LeRobot's MetaworldEnv and lerobot-eval's rollout: the env
    built through its constructor and reset by the rollout, as ``create_metaworld_envs`` builds
    it, its step limit set by gymnasium's TimeLimit (read by the rollout as the env's own)."""
    import gymnasium as gym
    from gymnasium.wrappers import TimeLimit
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import MetaworldEnv as MetaworldConfig
    from lerobot.envs.factory import make_env_pre_post_processors
    from lerobot.envs.metaworld import MetaworldEnv
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.scripts.lerobot_eval import rollout

    env_config = MetaworldConfig(task=f"metaworld-{task_name}", obs_type="pixels_agent_pos")
    vector = gym.vector.SyncVectorEnv(
        [lambda: TimeLimit(MetaworldEnv(task=env_config.task, **env_config.gym_kwargs), STEPS)]
    )
    config = PreTrainedConfig.from_pretrained(folder)
    config.device = "cpu"
    policy = get_policy_class(config.type).from_pretrained(folder, config=config).eval()
    pre, post = make_pre_post_processors(config, pretrained_path=str(folder))
    env_pre, env_post = make_env_pre_post_processors(env_config, config)
    tokens: list[Any] = []
    torch.manual_seed(seed)  # the harness seeds each episode's torch RNG with its seed
    out = rollout(
        vector, policy, env_pre, env_post, recording(pre, tokens), post, seeds=[seed],
        return_observations=True,
    )  # fmt: skip
    description = vector.call("task_description")[0]
    vector.close()
    steps = out["action"].shape[1]
    observations = [
        {k: v[:, t] for k, v in out["observation"].items()} for t in range(steps)
    ]  # fmt: skip
    return {"observation": observations, "action": out["action"][0].numpy(),
            "description": description, "tokens": tokens}  # fmt: skip


@pytest.mark.parametrize("kind", [*lerobot_models.KINDS, "smolvla"])
def test_metaworld_matches_lerobot_eval_step_for_step(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
):
    inputs = {"observation.state": (4,), "observation.image": (3, SIZE, SIZE)}
    folder = build(kind, tmp_path / kind, inputs, 4, request)
    ours = harness(folder, "reach-v3", episode=3)
    theirs = lerobot(folder, "reach-v3", ours["seed"])
    assert len(ours["raw_action"]) == len(theirs["action"]) == STEPS
    for step, (mine, other) in enumerate(
        zip(ours["observation"], theirs["observation"], strict=True)
    ):
        for key in ("observation.image", "observation.state"):
            assert torch.equal(mine[key], other[key]), f"step {step}: {key} differs"
    actions = np.stack(ours["raw_action"])
    difference = np.abs(actions - theirs["action"]).max()
    print(f"{kind}: {STEPS} steps, max |action difference| = {difference}")
    assert difference == 0.0
    assert set(ours["description"]) == {theirs["description"]}
    assert_same_tokens(kind, ours["tokens"], theirs["tokens"])


def assert_same_tokens(kind: str, ours: list[Any], theirs: list[Any]) -> None:
    """SmolVLA and the pi0 family tokenize the task at every step: the same tokens on both
    sides."""
    if kind not in ("smolvla", *lerobot_models.PI_KINDS):
        assert ours == theirs == []
        return
    assert len(ours) == len(theirs) == STEPS
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    assert ours[0].numel() > 1  # the description, not an empty string


LIBERO_SIZE = 64


@pytest.mark.parametrize("kind", [*lerobot_models.KINDS, "smolvla", *lerobot_models.PI_KINDS])
def test_libero_matches_lerobot_eval_step_for_step(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
):
    with sized(kind):
        libero_parity(kind, tmp_path, request)


def libero_parity(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    import gymnasium as gym

    from pytest_benchmarks.envs.libero.setup import prepare

    prepare()  # LIBERO's config.yaml, so that importing libero.libero never prompts
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import LiberoEnv as LiberoConfig
    from lerobot.envs.factory import make_env_pre_post_processors
    from lerobot.envs.libero import LiberoEnv
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.scripts.lerobot_eval import rollout
    from libero.libero import benchmark as libero_benchmark

    inputs = {"observation.state": (8,), "observation.images.image": (3, LIBERO_SIZE, LIBERO_SIZE),
              "observation.images.image2": (3, LIBERO_SIZE, LIBERO_SIZE)}  # fmt: skip
    folder = build(kind, tmp_path / kind, inputs, 7, request)

    benchmark = catalog.get("libero")
    task = benchmark.select(["libero_spatial/0"])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=1, sync=True, seed=SEED,
        policy=f"lerobot:{folder}", max_steps=STEPS, metrics=Path("m.json"),
        image_size=(LIBERO_SIZE, LIBERO_SIZE),
    ).env_config(task)  # fmt: skip
    assert config.obs == "lerobot"
    processors = benchmark.processors(config)
    policy = make_policy(f"lerobot:{folder}", benchmark, config, 1, "cpu", processors.features)
    ours: dict[str, list[Any]] = {"observation": [], "action": [], "tokens": []}
    act = policy.act
    policy.preprocessor = recording(policy.preprocessor, ours["tokens"])  # type: ignore[attr-defined]

    def recording_act(batch: dict[str, Any]) -> np.ndarray:
        ours["observation"].append(policy.observation(batch, 0))  # type: ignore[attr-defined]
        actions = act(batch)
        ours["action"].append(policy.last_raw[0].copy())  # type: ignore[attr-defined]
        return actions

    policy.act = recording_act  # type: ignore[method-assign]
    result = evaluate_task(
        LazyVectorEnv(benchmark, config, 1, sync=True),
        policy,
        processors=processors,
        seed=SEED,
        episodes=[2],
        record=lambda r: None,
    )
    assert result.error is None
    episode = result.episodes[0]

    suite = libero_benchmark.get_benchmark_dict()["libero_spatial"]()
    vector = gym.vector.SyncVectorEnv([lambda: LiberoEnv(
        suite, task_id=task.task_id, task_suite_name="libero_spatial", episode_length=STEPS,
        obs_type="pixels_agent_pos", observation_width=LIBERO_SIZE,
        observation_height=LIBERO_SIZE, episode_index=episode.init_state,
    )])  # fmt: skip
    theirs: list[dict[str, Any]] = []
    lerobot_config = PreTrainedConfig.from_pretrained(folder)
    lerobot_config.device = "cpu"
    env_step, env_post = make_env_pre_post_processors(
        LiberoConfig(task="libero_spatial"), lerobot_config
    )

    def recording_env_preprocessor(observation: dict[str, Any]) -> dict[str, Any]:
        theirs.append(env_step(observation))
        return theirs[-1]

    lerobot_policy = get_policy_class(lerobot_config.type).from_pretrained(
        folder, config=lerobot_config
    ).eval()  # fmt: skip
    pre, post = make_pre_post_processors(lerobot_config, pretrained_path=str(folder))
    tokens: list[Any] = []
    torch.manual_seed(episode.seed)
    out = rollout(
        vector, lerobot_policy, recording_env_preprocessor, env_post, recording(pre, tokens),
        post, seeds=[episode.seed],
    )  # fmt: skip
    assert vector.envs[0].task_description == task.description
    vector.close()
    assert len(ours["action"]) == out["action"].shape[1] == STEPS
    for step, (mine, other) in enumerate(zip(ours["observation"], theirs, strict=True)):
        for key in ("observation.images.image", "observation.images.image2", "observation.state"):
            assert torch.equal(mine[key], other[key]), f"step {step}: {key} differs"
    difference = np.abs(np.stack(ours["action"]) - out["action"][0].numpy()).max()
    print(f"libero {kind}: {STEPS} steps, max |action difference| = {difference}")
    assert difference == 0.0
    assert_same_tokens(kind, ours["tokens"], tokens)


def test_lerobot_axis_angle_without_torch_agrees_with_torch():
    from pytest_benchmarks.envs.libero.env import (
        axis_angle_float32_numpy,
        axis_angle_float32_torch,
    )

    rng = np.random.default_rng(0)
    quats = rng.normal(size=(256, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[0] = [0.0, 0.0, 0.0, 1.0]  # no rotation: the axis is undefined, the result zero
    np.testing.assert_allclose(
        axis_angle_float32_numpy(quats), axis_angle_float32_torch(quats), atol=2e-6
    )
    assert not axis_angle_float32_torch(quats[:1]).any()
