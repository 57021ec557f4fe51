"""Render modes: faithful frames are the simulators' own, fast frames differ a little, and runs
of one mode are never judged against snapshots or runs of the other."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from helpers import ROOT, pixel_episodes, run, seeded_actions

from pytest_benchmarks.core import catalog, rendering
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.mujoco.render import configure_xml
from pytest_benchmarks.metrics.gate import Incomparable, check_comparable
from pytest_benchmarks.metrics.snapshots import ABSENT, NAMES, REMEDY, read

rendering.choose_backend()

SIZE = (96, 128)  # not square, so a height/width mix-up shows
STEPS = 4


def harness_frames(
    benchmark: str, task: str, render: str, episodes: int = 1
) -> dict[str, np.ndarray]:
    """Per camera key, the frames of a reset and ``STEPS`` seeded steps through our env, for
    each episode (initial state k for episode k)."""
    frames = pixel_episodes(benchmark, task, render, SIZE, episodes, STEPS)
    keys = [key for key in frames[0] if key.endswith("_image")]
    return {key: np.stack([f[key] for f in frames]) for key in keys}


def metaworld_own_frames(task: str) -> dict[str, np.ndarray]:
    """The same episode through Meta-World's own env and renderer, nothing of ours in between."""
    import metaworld

    goals = metaworld.MT1(task, seed=1000).train_tasks
    env = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task](
        render_mode="rgb_array", camera_name="corner2", width=SIZE[1], height=SIZE[0]
    )
    env.set_task(goals[0])
    env.seed(0)
    env.reset()
    frames = [env.render()]
    for action in seeded_actions(env.action_space.shape[0], STEPS):
        env.step(action)
        frames.append(env.render())
    env.close()
    return {"corner2_image": np.stack(frames)}


def libero_own_frames(task_id: int, episodes: int) -> dict[str, np.ndarray]:
    """The same episodes through LIBERO's own ControlEnv (its default offscreen buffer, its
    hard reset: a new model and render context each time)."""
    import os

    from pytest_benchmarks.envs.libero.env import CAMERAS, NOOP
    from pytest_benchmarks.envs.libero.setup import prepare

    prepare()
    from libero.libero import benchmark, get_libero_path
    from libero.libero.envs.env_wrapper import ControlEnv

    suite = benchmark.get_benchmark_dict()["libero_spatial"]()
    task = suite.get_task(task_id)
    env = ControlEnv(
        bddl_file_name=os.path.join(
            get_libero_path("bddl_files"), task.problem_folder, task.bddl_file
        ),
        has_renderer=False, has_offscreen_renderer=True, use_camera_obs=True,
        camera_names=[c.removesuffix("_image") for c in CAMERAS],
        camera_heights=SIZE[0], camera_widths=SIZE[1],
    )  # fmt: skip
    frames = []
    for episode in range(episodes):
        env.seed(0)
        env.reset()
        raw = env.set_init_state(suite.get_task_init_states(task_id)[episode])
        for _ in range(10):
            raw, *_ = env.step(NOOP)
        frames.append(raw)
        for action in seeded_actions(7, STEPS):
            frames.append(env.step(action)[0])
    env.close()
    return {key: np.stack([f[key] for f in frames]) for key in CAMERAS}


@pytest.mark.parametrize(
    ("name", "task", "episodes", "own"),
    [
        ("metaworld", "push-v3", 1, lambda: metaworld_own_frames("push-v3")),
        # Two episodes: the second reset's frames come from the render context kept from the
        # first (envs.libero.reset), LIBERO's own from a new one.
        ("libero", "libero_spatial/0", 2, lambda: libero_own_frames(0, 2)),
    ],
)
def test_faithful_frames_are_the_simulators_own_and_fast_ones_differ_a_little(
    name: str, task: str, episodes: int, own: Any
):
    """The sized offscreen buffer changes no pixel; fast changes some, by a few levels."""
    expected = own()
    faithful = harness_frames(name, task, "faithful", episodes)
    fast = harness_frames(name, task, "fast", episodes)
    assert faithful.keys() == expected.keys() == fast.keys()
    for key, frames in expected.items():
        assert faithful[key].shape == (episodes * (STEPS + 1), *SIZE, 3)
        assert np.array_equal(faithful[key], frames), key
        difference = np.abs(fast[key].astype(np.int16) - faithful[key]).mean()
        # Shadows and reflections gone: visible, but the same scene (measured 2-11 levels).
        assert 0.5 < difference < 25, (key, difference)


GATED_PIXELS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_gate(evaluate, snapshot):
    assert evaluate() == snapshot
"""


def test_the_gate_refuses_a_snapshot_of_the_other_render_mode(pytester: pytest.Pytester):
    pytester.makepyfile(test_gate=GATED_PIXELS)
    args = ("--benchmark-task=reach-v3", "--benchmark-episodes=1",
            "--benchmark-obs=pixels", "--benchmark-image-size=48", "--benchmark-max-steps=30",
            "--benchmark-metrics=run.json")  # fmt: skip
    stored = run(pytester, *args, "--snapshot-update")
    assert stored.ret == 0, stored.stdout.str()
    path = next(pytester.path.glob("__benchmark_snapshots__/**/*.json"))
    assert json.loads(path.read_text())["settings"]["render"] == "faithful"
    fast = run(pytester, *args, "--benchmark-render=fast")
    assert fast.ret == pytest.ExitCode.TESTS_FAILED
    fast.stdout.fnmatch_lines([
        "*metaworld/reach-v3: snapshot *reach-v3.json: the snapshot and this run are different "
        "experiments (render faithful → fast): runs that differ in --benchmark-render are not "
        "compared; run with the snapshot's settings, or store a new snapshot with "
        "--snapshot-update --benchmark-snapshot-replace"
    ])  # fmt: skip
    assert json.loads((pytester.path / "run.json").read_text())["run"]["render"] == "fast"
    # Updating does not overwrite the faithful snapshot unless told to.
    kept = run(pytester, *args, "--benchmark-render=fast", "--snapshot-update")
    assert json.loads(path.read_text())["settings"]["render"] == "faithful", kept.stdout.str()
    replaced = run(
        pytester,
        *args,
        "--benchmark-render=fast",
        "--snapshot-update",
        "--benchmark-snapshot-replace",
    )
    assert replaced.ret == 0
    assert json.loads(path.read_text())["settings"]["render"] == "fast"


def test_a_pixel_snapshot_from_before_the_render_mode_counts_as_faithful():
    stored = ROOT / "benchmarks/__benchmark_snapshots__/test_metaworld/test_no_regression"
    doc = json.loads((stored / "metaworld/push-v3.json").read_text())
    assert "render" not in doc["settings"]  # a state snapshot records no render mode
    assert "render" not in read(json.dumps(doc)).settings
    doc["settings"].update(obs="pixels", image_size=[128, 128])
    legacy = read(json.dumps(doc)).settings
    assert legacy["render"] == "faithful"
    assert check_comparable(legacy, {**legacy, "render": "faithful"}, NAMES, REMEDY, ABSENT) == []
    with pytest.raises(Incomparable, match=r"\(render faithful → fast\)"):
        check_comparable(legacy, {**legacy, "render": "fast"}, NAMES, REMEDY, ABSENT)


def test_the_xml_gets_the_image_sized_buffer_and_fast_no_multisampling():
    xml = '<mujoco><visual><global fovy="45"/></visual><worldbody/></mujoco>'
    fast = configure_xml(xml, (96, 128), "fast")
    assert fast.count("<global") == 1 and fast.count("<quality") == 1
    assert '<global fovy="45" offwidth="128" offheight="96" />' in fast
    assert '<quality offsamples="0" />' in fast
    assert "offsamples" not in configure_xml("<mujoco/>", (64, 64), "faithful")


@pytest.mark.parametrize(
    ("name", "tasks"),
    [
        ("metaworld", ("door-open-v3", "push-v3")),
        ("libero", ("libero_spatial/0", "libero_object/0")),
    ],
)
def test_envs_sharing_a_process_each_render_their_own_frames(name: str, tasks: tuple[str, ...]):
    """The simulators render into whichever GL context is current (the last one made): two envs
    stepped in turn in one process (--benchmark-sync) give each the frames it gives alone."""
    alone = {task: harness_frames(name, task, "fast") for task in tasks}
    bench = catalog.get(name)
    envs = [
        bench.make_env(
            EnvConfig(bench.select([t])[0], 500, 1000, obs="pixels", image_size=SIZE, render="fast")
        )
        for t in tasks
    ]
    frames: list[list[dict[str, np.ndarray]]] = [[] for _ in envs]
    try:
        for env, seen in zip(envs, frames, strict=True):
            seen.append(env.reset(seed=0, options={"init_state": 0})[0])
        for action in seeded_actions(envs[0].action_space.shape[0], STEPS):
            for env, seen in zip(envs, frames, strict=True):
                seen.append(env.step(action)[0])
    finally:
        for env in envs:
            env.close()
    for task, seen in zip(tasks, frames, strict=True):
        for key, expected in alone[task].items():
            assert np.array_equal(np.stack([f[key] for f in seen]), expected), (task, key)
