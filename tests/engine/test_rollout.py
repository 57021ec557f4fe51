"""The rollout on real simulators: slots, parking, determinism across batch sizes and sync/async."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv, SlotEnv
from pytest_benchmarks.policies import make_policy


def _evaluate(
    name: str, task: str, spec: str, batch: int, sync: bool, episodes: int, max_steps: int
) -> TaskResult:
    benchmark = catalog.get(name)
    ref = benchmark.select([task])[0]
    config = EnvConfig(ref, max_steps, 1000)
    env = LazyVectorEnv(benchmark, config, batch, sync=sync)
    try:
        policy = make_policy(spec, benchmark, config, batch)
        return evaluate_task(
            env,
            policy,
            processors=benchmark.processors(config),
            seed=1000,
            episodes=range(episodes),
            record=lambda r: None,
        )
    finally:
        env.close()


def test_metaworld_episode_outcomes_do_not_depend_on_batch_size():
    runs = {
        (batch, sync): _evaluate("metaworld", "push-v3", "scripted", batch, sync, 5, 120)
        for batch, sync in [(1, True), (2, False), (4, True)]
    }
    outcomes = {key: [e.outcome() for e in r.episodes] for key, r in runs.items()}
    first = outcomes[(1, True)]
    assert all(o == first for o in outcomes.values())
    assert [o[2] for o in first] == [0, 1, 2, 3, 4]  # init_state = goal variation i mod 50
    assert any(e.success for e in runs[(1, True)].episodes)
    assert all(1 <= e.steps <= 120 for e in runs[(1, True)].episodes)


def test_random_policy_is_reproducible_per_episode():
    import toybench  # noqa: F401

    a = _evaluate("toy", "stroll", "random", 1, True, 6, 30)
    b = _evaluate("toy", "stroll", "random", 3, False, 6, 30)
    assert [e.outcome() for e in a.episodes] == [e.outcome() for e in b.episodes]
    assert len({e.sum_reward for e in a.episodes}) > 1  # different seeds, different episodes


def test_noop_policy_never_succeeds_and_runs_to_the_limit():
    import toybench  # noqa: F401

    result = _evaluate("toy", "walk", "noop", 2, True, 3, 12)
    assert [(e.success, e.steps) for e in result.episodes] == [(False, 12)] * 3


def test_a_finished_slot_never_steps_its_simulator_past_the_end():
    benchmark = catalog.get("metaworld")
    task = benchmark.select(["reach-v3"])[0]
    slot = SlotEnv(type(benchmark), EnvConfig(task, 5, 0), 0)
    assert slot._env is None  # no simulator until the first reset
    slot.reset(seed=0, options={"slots": [{"init_state": 3}]})
    inner = slot._env._env
    ended = [slot.step(np.zeros(4, np.float32))[3] for _ in range(5)]
    assert ended == [False] * 4 + [True]
    assert inner.curr_path_length == 5
    last = slot.step(np.ones(4, np.float32))
    assert last[1:4] == (0.0, False, False)  # parked: no reward, no new ending
    assert inner.curr_path_length == 5
    parked, _ = slot.reset(options={"slots": [{"park": True}]})
    assert parked is last[0] and inner.curr_path_length == 5
    slot.close()


def test_feature_mismatch_fails_the_task():
    import toybench

    benchmark = catalog.get("toy")
    task = benchmark.select(["walk"])[0]
    processors = benchmark.processors(EnvConfig(task, 10, 0))
    processors.features["observation.state"] = toybench.Feature((3,), "float32")
    env = LazyVectorEnv(benchmark, EnvConfig(task, 10, 0), 1, sync=True)
    recorded: list[TaskResult] = []
    with pytest.raises(
        ValueError,
        match=r"feature 'observation.state' is float32\[1, 2\], declared float32\[1, 3\]",
    ):
        evaluate_task(
            env,
            benchmark.scripted_policy(task, 1),
            processors=processors,
            seed=0,
            episodes=range(2),
            record=recorded.append,
        )
    env.close()
    assert recorded[0].error.startswith("FeatureMismatch: feature 'observation.state'")


@pytest.mark.parametrize(
    ("fault", "error", "finished"),
    [
        # NaN in the fourth observation of the first episode: caught on that step.
        ("nan", "FeatureMismatch: feature 'observation.state' holds NaN or inf", 0),
        # The state loses a column from the fourth observation on: shapes are checked as each
        # episode starts, so the first episode ends and the second's first step fails.
        ("shape", "FeatureMismatch: feature 'observation.state' is float32[1, 1], declared "
                  "float32[1, 2]", 1),
    ],
)  # fmt: skip
def test_values_are_checked_every_step_and_shapes_as_each_episode_starts(
    fault: str, error: str, finished: int
):
    import toybench  # noqa: F401  (registers the toy benchmark)

    benchmark = catalog.get("toy")
    task = benchmark.select(["walk"])[0]
    processors = benchmark.processors(EnvConfig(task, 10, 0))
    calls = [0]

    def broken(batch: dict) -> dict:
        calls[0] += 1
        state = batch["observation.state"]
        if calls[0] >= 4 and fault == "shape":
            state = state[:, :1]
        if calls[0] == 4 and fault == "nan":
            state = np.where(True, np.float32("nan"), state)
        return {**batch, "observation.state": state}

    processors.steps.append(broken)
    env = LazyVectorEnv(benchmark, EnvConfig(task, 10, 0), 1, sync=True)
    recorded: list[TaskResult] = []
    with pytest.raises(ValueError):
        evaluate_task(
            env,
            benchmark.scripted_policy(task, 1),
            processors=processors,
            seed=0,
            episodes=range(2),
            record=recorded.append,
        )
    env.close()
    assert recorded[0].error == error
    assert [e.steps for e in recorded[0].episodes] == [5] * finished  # success at step 5


def test_metaworld_pixels_render_corner2_upright_beside_the_state():
    benchmark = catalog.get("metaworld")
    task = benchmark.select(["reach-v3"])[0]
    config = EnvConfig(task, 3, 0, obs="pixels", image_size=(48, 64),
                       camera_map=(("corner2", "camera1"),))  # fmt: skip
    env = LazyVectorEnv(benchmark, config, 1, sync=True)
    try:
        obs, _ = env.get().reset(seed=[0], options={"slots": [{"init_state": 0}]})
        batch = benchmark.processors(config)(obs)
    finally:
        env.close()
    benchmark.processors(config).check(batch, 1)
    image = batch["observation.images.camera1"]
    assert image.shape == (1, 48, 64, 3) and image.dtype == np.uint8
    assert image.std() > 5
    assert (image[0, 0, 0] == obs["corner2_image"][0, -1, -1]).all()
    assert batch["observation.state"].shape == (1, 39)


@pytest.mark.parametrize("obs", ["pixels", "state"])  # a Dict observation, and a Box one
def test_the_lean_in_process_vector_env_steps_as_gymnasiums_sync_vector_env(obs):
    from functools import partial

    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from pytest_benchmarks.engine.vector import SlotVectorEnv
    from pytest_benchmarks.envs.metaworld.benchmark import MetaWorld

    benchmark = catalog.get("metaworld")
    config = EnvConfig(benchmark.select(["reach-v3"])[0], 4, 0, obs=obs, image_size=(24, 32))
    fns = [partial(SlotEnv, MetaWorld, config, slot) for slot in range(2)]
    envs = [cls(fns, copy=False, autoreset_mode=AutoresetMode.DISABLED)
            for cls in (SyncVectorEnv, SlotVectorEnv)]  # fmt: skip
    options = {"slots": [{"init_state": 0}, {"init_state": 3}]}
    try:
        for env in envs:
            env.reset(seed=[1, 2], options=options)
        actions = np.random.default_rng(0).uniform(-1, 1, (4, 2, 4)).astype(np.float32)
        for step, action in enumerate(actions):
            if step == 2:  # slot 1 starts over while slot 0 goes on, as the rollout does
                # (a dict each: gymnasium pops reset_mask from the options it is given)
                resets = [env.reset(seed=[None, 3], options={
                    "reset_mask": np.array([False, True]), "slots": [{}, {"init_state": 5}]
                })[0] for env in envs]  # fmt: skip
                for mine, other in zip(_leaves(resets[1]), _leaves(resets[0]), strict=True):
                    np.testing.assert_array_equal(mine, other)
            ours, theirs = envs[1].step(action), envs[0].step(action)
            for mine, other in zip(ours[:4], theirs[:4], strict=True):
                if isinstance(mine, dict):
                    assert mine.keys() == other.keys()
                    for key in mine:
                        np.testing.assert_array_equal(mine[key], other[key])
                else:
                    np.testing.assert_array_equal(mine, other)
            np.testing.assert_array_equal(ours[4]["success"], theirs[4]["success"])
            assert ours[3][0] == (step == 3)  # truncated at max_steps
    finally:
        for env in envs:
            env.close()


def _leaves(obs: Any) -> list[np.ndarray]:
    """The arrays of a batched observation, in key order for a dict."""
    return [obs[key] for key in sorted(obs)] if isinstance(obs, dict) else [obs]


def test_stopping_workers_skips_one_that_never_started():
    """A vector env whose start failed part way (its forkserver gone) holds a process that
    never started: it is skipped, and the started one is still reaped."""
    import multiprocessing
    import time

    from pytest_benchmarks.engine.vector import stop_processes

    context = multiprocessing.get_context("spawn")
    started = context.Process(target=time.sleep, args=(60,))
    started.start()
    never = context.Process(target=time.sleep, args=(60,))
    stop_processes([started, never], timeout_s=0.0)
    assert started.exitcode is not None and never.pid is None
