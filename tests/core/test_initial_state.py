"""Initial-state digests: each simulator's state after reset, read through its wrappers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_benchmarks.core import catalog, initial_state
from pytest_benchmarks.core.plan import EpisodeSpec, plan_episodes
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.vector import SlotEnv


def test_a_digest_reads_a_tenth_of_a_millimetre_not_the_last_bits():
    qpos = np.array([0.25, -0.5, 0.0, 1.0])
    first = initial_state.digest([qpos, np.zeros(3)])
    assert re.fullmatch(r"[0-9a-f]{12}", first)
    assert initial_state.digest([qpos + 1e-12, -np.zeros(3)]) == first  # noise, -0.0
    assert initial_state.digest([qpos + np.array([0, 0, 1e-4, 0]), np.zeros(3)]) != first
    assert initial_state.digest([np.zeros(3), qpos]) != first  # the order counts


#: The plan's base seed (the committed snapshots').
SEED = 1000


def _reset(slot: SlotEnv, spec: EpisodeSpec) -> str:
    """The digest of the episode's start, reset as the rollout resets it."""
    start = {"init_state": spec.init_state, "index": spec.index}
    _, info = slot.reset(seed=spec.seed, options={"slots": [start]})
    return info[initial_state.INFO_KEY]


def _slot(env: str, task: str) -> tuple[SlotEnv, list[EpisodeSpec]]:
    """A slot of the task's env, and the plan of its first episodes."""
    benchmark = catalog.get(env)
    ref = benchmark.select([task])[0]
    plan = plan_episodes(benchmark, ref, SEED, range(3))
    return SlotEnv(type(benchmark), EnvConfig(ref, 5, SEED), 0), plan


@pytest.mark.parametrize(
    ("env", "task", "episodes", "mujoco"),
    [
        ("metaworld", "reach-v3", 3, True),
        ("aloha", "AlohaTransferCube-v0", 3, True),
        ("libero", "libero_goal/2", 2, True),  # an env build of 6-11 s, a reset of about 1.5 s
        ("pusht", "pusht", 3, False),
    ],
)
def test_each_simulators_reset_state_has_a_digest_that_follows_it(
    env: str, task: str, episodes: int, mujoco: bool
):
    """The digest is found through each env's wrappers (MuJoCo's data in Meta-World,
    dm_control and robosuite; PushT's bodies), differs for each of the plan's first episodes
    (what reset randomises is read), is the same for the same start again, and differs for an
    object moved by a millimetre."""
    slot, plan = _slot(env, task)
    try:
        digests = [_reset(slot, spec) for spec in plan[:episodes]]
        assert all(re.fullmatch(r"[0-9a-f]{12}", d) for d in digests)
        assert len(set(digests)) == episodes, digests
        first = digests[0]
        assert _reset(slot, plan[0]) == first
        if mujoco:
            arrays = initial_state.state_arrays(slot._env)
            assert arrays is not None
            qpos = arrays[0]
            qpos[-1] += 1e-9
            assert initial_state.of(slot._env)[initial_state.INFO_KEY] == first
            qpos[-1] += 1e-3
            moved = initial_state.of(slot._env)
            assert moved[initial_state.INFO_KEY] != first
            # The sketch says by how much: 1e-3 (within the estimate's spread).
            qpos[-1] -= 1e-3
            far = initial_state.distance(moved[initial_state.SKETCH_KEY],
                                         initial_state.of(slot._env)[initial_state.SKETCH_KEY])  # fmt: skip
            assert far is not None and 2e-4 < far < 5e-3, far
    finally:
        slot.close()


#: Meta-World tasks whose committed snapshots once held one digest for all 50 episodes (their
#: objects and goals are placed through the model) or fewer than 50 (part of the placement was),
#: and a sample of those placed through joints. All 50 together take about 20 s here.
METAWORLD_TASKS = (
    *("assembly-v3", "button-press-topdown-v3", "button-press-topdown-wall-v3"),
    *("button-press-v3", "button-press-wall-v3", "dial-turn-v3", "door-close-v3"),
    *("door-open-v3", "drawer-close-v3", "drawer-open-v3", "faucet-close-v3"),
    *("faucet-open-v3", "lever-pull-v3", "pick-out-of-hole-v3", "plate-slide-back-side-v3"),
    *("plate-slide-back-v3", "plate-slide-side-v3", "plate-slide-v3", "window-close-v3"),
    *("window-open-v3", "door-lock-v3", "door-unlock-v3", "handle-press-side-v3"),
    *("handle-press-v3", "handle-pull-side-v3", "handle-pull-v3"),
    *("pick-place-v3", "push-v3", "basketball-v3", "sweep-into-v3"),
)


@pytest.mark.parametrize("task", METAWORLD_TASKS)
def test_each_metaworld_episode_starts_from_its_own_digest(task: str):
    """Episodes 0-2 of the plan (goal variations 0-2) read three digests: the object and goal
    placement is in the digest, where MuJoCo's state alone may not hold it."""
    slot, plan = _slot("metaworld", task)
    try:
        digests = [_reset(slot, spec) for spec in plan]
        assert len(set(digests)) == len(plan), digests
    finally:
        slot.close()


@pytest.mark.parametrize("env", ["metaworld", "lerobot:metaworld"])
def test_a_goal_placed_through_the_model_moves_the_digest(env: str):
    """door-open-v3 places its door and goal by the model's body and site positions: MuJoCo's
    state reads the same for two goal variations, the digest does not, natively and through
    LeRobot's MetaworldEnv (which the digest reads through the harness's LeRobot wrapper)."""
    slot, plan = _slot(env, "door-open-v3")
    try:
        digests, mujoco = [], []
        for spec in plan[:2]:
            digests.append(_reset(slot, spec))
            data = initial_state.find(slot._env, "data")
            mujoco.append(
                initial_state.digest(getattr(data, f) for f in initial_state.MUJOCO_FIELDS)
            )
        assert mujoco[0] == mujoco[1] and digests[0] != digests[1]
    finally:
        slot.close()


def test_an_env_may_say_its_own_state():
    class Own:
        def simulator_state(self) -> list[float]:
            return [1.5]

    class Wrapper:
        env = Own()

    assert initial_state.of(Wrapper())[initial_state.INFO_KEY] == initial_state.digest([[1.5]])
    assert initial_state.of(object()) == {}


def test_a_sketch_says_how_far_a_state_moved():
    """Two sketches' distance estimates the distance between the states (within about a
    quarter, here over 200 random moves of each size); states of two sizes have none."""
    rng = np.random.default_rng(0)
    state = rng.normal(size=60)
    for size in (1e-5, 1e-2, 0.5):
        ratios = []
        for _ in range(200):
            move = rng.normal(size=60)
            move *= size / np.linalg.norm(move)
            far = initial_state.distance(initial_state.sketch([state]),
                                         initial_state.sketch([state + move]))  # fmt: skip
            assert far is not None
            ratios.append(far / size)
        assert 0.85 < float(np.median(ratios)) < 1.15, (size, np.median(ratios))
        assert np.mean(np.abs(np.array(ratios) - 1) < 0.5) > 0.9
    assert (
        initial_state.distance(initial_state.sketch([state]), initial_state.sketch([state[:59]]))
        is None
    )
    assert initial_state.sketch([state])[0] == 60
