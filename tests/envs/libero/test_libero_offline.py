"""LIBERO offline: no prompt, every suite's tasks and initial states, processors, real rollouts."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import run

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.libero import benchmark as lib

pytestmark = pytest.mark.skipif(
    catalog.get("libero").missing() is not None, reason="pytest-benchmarks[libero] not installed"
)


def _clean_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LIBERO_CONFIG_PATH", "XDG_CACHE_HOME")}
    env["HOME"] = home
    return env


@pytest.mark.parametrize("home", ["empty", "unwritable"])
def test_import_never_prompts(tmp_path, home):
    """A fresh HOME (or one that cannot be written) gets a config; stdin is closed, so a prompt
    would fail with EOFError."""
    directory = str(tmp_path) if home == "empty" else "/proc/self/nonexistent"
    script = (
        "from pytest_benchmarks.envs.libero.setup import prepare; prepare();"
        "from libero.libero import benchmark, get_libero_path;"
        "print(get_libero_path('assets'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=_clean_env(directory), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Do you want" not in done.stdout
    assert done.stdout.strip().splitlines()[-1].endswith("assets")
    if home == "empty":
        assert (tmp_path / ".cache" / "pytest-benchmarks" / "libero" / "config.yaml").is_file()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("benchmark_root: [unclosed", "while parsing a flow sequence"),
        ("- a\n- list\n", "a list, expected a mapping"),
        ("benchmark_root: /x\n", "no path for bddl_files, init_states, datasets, assets"),
        ("\udcff", "'utf-8' codec can't decode*"),
    ],
)
def test_a_corrupt_config_of_the_users_own_is_one_line_naming_it(tmp_path, content, reason):
    config = tmp_path / "config.yaml"
    if content == "\udcff":
        config.write_bytes(b"\xff\xfe binary")
    else:
        config.write_text(content)
    env = {**_clean_env(str(tmp_path)), "LIBERO_CONFIG_PATH": str(tmp_path)}
    script = "from pytest_benchmarks.envs.libero.setup import prepare; prepare()"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert fnmatch.fnmatch(last, f"*LiberoConfigError: {config}: not a LIBERO config ({reason})"), (
        last
    )


def test_setup_command_lays_down_the_config_and_loads_a_task(tmp_path):
    """What the LIBERO image runs at build time."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_benchmarks.envs.libero", "--check"],
        env=_clean_env(str(tmp_path)), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    config = tmp_path / ".cache" / "pytest-benchmarks" / "libero" / "config.yaml"
    assert f"LIBERO config: {config}" in done.stdout
    assert "loaded and reset libero/libero_spatial/0 offline" in done.stdout


def test_every_suite_matches_libero_and_has_50_initial_states():
    from pytest_benchmarks.envs.libero.setup import prepare

    prepare()
    from libero.libero import benchmark

    ours = catalog.get("libero")
    for suite in ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90"):
        theirs = benchmark.get_benchmark_dict()[suite]()
        tasks = ours.select([suite])
        assert len(tasks) == theirs.get_num_tasks() == (90 if suite == "libero_90" else 10)
        for task in tasks:
            reference = theirs.get_task(task.task_id)
            assert (task.task, task.description) == (reference.name, reference.language)
            assert task.id == f"libero/{suite}/{task.task_id}"
            assert len(theirs.get_task_init_states(task.task_id)) == lib.N_INIT_STATES
    task = ours.select(["libero_goal/put_the_bowl_on_the_plate"])[0]
    assert task.id == "libero/libero_goal/" + str(task.task_id)
    assert [ours.init_state(task, i) for i in (0, 49, 50, 123)] == [0, 49, 0, 23]


def test_processors_state_camera_names_and_orientation():
    from robosuite.utils.transform_utils import quat2axisangle

    task = catalog.get("libero").select(["libero_spatial/0"])[0]
    config = EnvConfig(task, 10, 0, obs="pixels", image_size=(6, 4),
                       camera_map=(("agentview", "camera1"), ("robot0_eye_in_hand_image", "camera2")))  # fmt: skip
    rng = np.random.default_rng(0)
    quats = rng.normal(size=(3, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[2] = [0.0, 0.0, 0.0, 1.0]  # identity: zero rotation
    image = rng.integers(0, 255, size=(3, 6, 4, 3), dtype=np.uint8)
    raw = {
        "robot0_eef_pos": rng.normal(size=(3, 3)),
        "robot0_eef_quat": quats,
        "robot0_gripper_qpos": rng.normal(size=(3, 2)),
        "agentview_image": image,
        "robot0_eye_in_hand_image": image[:, :, :, ::-1],
    }
    processors = catalog.get("libero").processors(config)
    batch = processors(raw)
    processors.check(batch, 3)
    assert sorted(batch) == [
        "observation.images.camera1", "observation.images.camera2", "observation.state", "task",
    ]  # fmt: skip
    state = batch["observation.state"]
    assert state.shape == (3, 8) and state.dtype == np.float32
    np.testing.assert_allclose(state[:, :3], raw["robot0_eef_pos"], rtol=1e-6)
    for row, quat in zip(state, quats, strict=True):
        np.testing.assert_allclose(row[3:6], quat2axisangle(quat), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[:, 6:], raw["robot0_gripper_qpos"], rtol=1e-6)
    upright = batch["observation.images.camera1"]
    assert upright.shape == (3, 6, 4, 3) and upright.dtype == np.uint8
    assert (upright[:, 0, 0] == image[:, -1, -1]).all()  # turned by 180 degrees
    assert batch["task"] == [task.description] * 3


def test_rendered_steps_give_both_images():
    task = catalog.get("libero").select(["libero_object/0"])[0]
    config = EnvConfig(task, 10, 0, obs="pixels", image_size=(64, 64), settle_steps=2)
    env = lib.LiberoTaskEnv(config)
    try:
        obs, _ = env.reset(seed=0, options={"init_state": 1})
        for _ in range(2):
            obs, _, _, _, info = env.step(np.zeros(7))
        assert env.observation_space.contains(obs)
        for camera in lib.CAMERAS:
            assert obs[camera].shape == (64, 64, 3) and obs[camera].dtype == np.uint8
            assert obs[camera].std() > 5  # a scene, not a blank frame
        assert not np.array_equal(obs["agentview_image"], obs["robot0_eye_in_hand_image"])
        assert info == {"success": False}
    finally:
        env.close()


def test_one_state_only_episode_through_pytest(pytester: pytest.Pytester):
    pytester.makepyfile(
        test_lib="""
import pytest

@pytest.mark.benchmark_env("libero")
def test_rollout(evaluate):
    result = evaluate()
    assert result.error is None and result.n_episodes == 1
"""
    )
    result = run(
        pytester, "--benchmark-env=libero", "--benchmark-task=libero_spatial/0",
        "--benchmark-obs=state", "--benchmark-policy=noop", "--benchmark-episodes=1",
        "--benchmark-max-steps=15", "-v",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_rollout[[]libero/libero_spatial/0[]] PASSED*",
                                 "libero/libero_spatial/0 *0/1*15.0*"])  # fmt: skip


#: A conftest that leaves libero_90/6 out as a task the expert is known to fail: the expert covers
#: all 130, so the collection-time skip is exercised on an entry the test adds.
LEFT_OUT = """
from pytest_benchmarks.envs.libero.expert import plan as libero_expert

libero_expert.CANNOT[("libero_90", 6)] = "left out by this test's conftest"
"""


def test_expert_based_policies_skip_tasks_without_an_expert(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    from pytest_benchmarks.envs.libero.expert import plan as libero_expert

    # The sessions run in this process and see the entry, which goes when the test ends.
    monkeypatch.setitem(libero_expert.CANNOT, ("libero_90", 6), "left out by this test's conftest")
    pytester.makepyfile(
        test_lib="""
import pytest

@pytest.mark.benchmark_env("libero")
def test_rollout(evaluate):
    evaluate()
"""
    )
    for spec in ("scripted", "scripted+noise:0.5"):
        result = run(
            pytester, "--benchmark-env=libero", "--benchmark-task=libero_90/6",
            f"--benchmark-policy={spec}", "-rs",
        )  # fmt: skip
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(
            ["*libero/libero_90/6: no scripted expert: left out by this test's conftest*"]
        )


def test_camera_renames_must_name_a_camera(pytester: pytest.Pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = run(
        pytester,
        "--benchmark-env=libero,metaworld",
        "--benchmark-camera-map=corner2_image=c1,wrist=c2",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --benchmark-camera-map: no camera 'wrist' in the selected benchmarks; "
        "valid: agentview, corner2, robot0_eye_in_hand"
    ])  # fmt: skip


def test_scripted_expert_covers_pick_and_place_goals_from_bddl():
    from pytest_benchmarks.envs.libero.env import bddl_path
    from pytest_benchmarks.envs.libero.expert.plan import goal_of, unsupported

    benchmark = catalog.get("libero")
    spatial = benchmark.select(["libero_spatial/0"])[0]
    assert goal_of(bddl_path(spatial)) == [("on", "akita_black_bowl_1", "plate_1")]
    covered = {
        suite: sum(benchmark.scripted_missing(t) is None for t in benchmark.select([suite]))
        for suite in ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
    }
    # docs/benchmarks/libero.md's 130 of 130: none planned and known to fail is left out.
    assert covered == {
        "libero_spatial": 10,
        "libero_object": 10,
        "libero_goal": 10,
        "libero_10": 10,
        "libero_90": 90,
    }
    assert benchmark.scripted_missing(benchmark.select(["libero_goal/3"])[0]) is None
    low = benchmark.select(["libero_90/6"])[0]  # a drawer dragged open by its handle's top
    assert benchmark.scripted_missing(low) is None
    drawer = benchmark.select(["libero_goal/0"])[0]  # a drawer pulled open by its handle
    assert benchmark.scripted_missing(drawer) is None
    door = benchmark.select(["libero_90/35"])[0]  # the microwave's door swung open
    assert benchmark.scripted_missing(door) is None
    # Every predicate the 130 goal files use is planned; anything else is named.
    assert unsupported([("on", "a", "b"), ("open", "c_region"), ("turnoff", "d")]) is None
    assert unsupported([]) == "the BDDL file states no goal"
    assert unsupported([("on", "a", "b"), ("stack", "a", "b")]) == (
        "of 2 goal predicates, one is (stack a b), not a pick-and-place (On/In), a push "
        "(Close/TurnOn/TurnOff) or a pull (Open)"
    )
    stove = benchmark.select(["libero_goal/7"])[0]  # turn on the stove: a push of its knob
    assert benchmark.scripted_missing(stove) is None
    assert goal_of(bddl_path(stove)) == [("turnon", "flat_stove_1")]
    two = benchmark.select(["libero_10/0"])[0]  # both cans into the basket: one after the other
    assert benchmark.scripted_missing(two) is None


def test_a_plan_places_what_is_placed_on_first():
    from pytest_benchmarks.envs.libero.expert.plan import plan_order

    # libero_90/63: stack the left bowl on the right bowl, and the right bowl in the tray.
    stack = [("on", "bowl_1", "bowl_2"), ("in", "bowl_2", "tray_region")]
    assert plan_order(stack) == [stack[1], stack[0]]
    cans = [("in", "soup_1", "basket_region"), ("in", "sauce_1", "basket_region")]
    assert plan_order(cans) == cans  # independent steps keep the BDDL order
    chain = [("on", "a", "b"), ("on", "b", "c"), ("on", "c", "d")]
    assert plan_order(chain) == chain[::-1]
    # libero_10/9: the mug into the microwave (its region), then the microwave's door closed.
    oven = [("close", "microwave_1"), ("in", "mug_1", "microwave_1_heating_region")]
    assert plan_order(oven) == oven[::-1]
    drawer = [("close", "cabinet_1_top_region"), ("in", "bowl_1", "cabinet_1_top_region")]
    assert plan_order(drawer) == drawer[::-1]
    other = [("close", "cabinet_1_top_region"), ("in", "bowl_1", "cabinet_1_bottom_region")]
    assert plan_order(other) == other
    stove = [("turnon", "stove_1"), ("on", "pot_1", "stove_1_cook_region")]
    assert plan_order(stove) == stove
    # libero_90/8 in the other order: the drawer pulled open, then the bowl into it.
    pull = [("in", "bowl_1", "cabinet_1_top_region"), ("open", "cabinet_1_top_region")]
    assert plan_order(pull) == pull[::-1]


@pytest.mark.parametrize(
    "task",
    [
        "libero_90/0",  # close the top drawer: slide, the closed fingers' front
        "libero_90/20",  # turn on the stove: the knob's pointer between the open fingers
        "libero_90/33",  # close the microwave: straddle the door, then push it shut
        "libero_90/1",  # close the drawer, turn the hand back, then the bowl onto the cabinet
        "libero_goal/0",  # open the drawer: the hand upright, the handle pulled along the slide
        "libero_90/35",  # open the microwave: its handle pulled round the hinge
    ],
)
def test_the_expert_moves_articulated_objects_until_libero_says_so(task):
    from pytest_benchmarks.api import evaluate

    run = evaluate("libero", "scripted", tasks=[task], episodes=1, obs="state", sync=True)
    (result,) = run.results
    assert result.error is None
    assert result.episodes[0].success  # LIBERO's own goal check ended the episode


def test_a_drawer_to_be_filled_is_pulled_open_first_unless_it_is_open():
    """libero_90/2 names only the bowl in the top drawer, which LIBERO's initial states leave
    open: the plan starts with the pull, which is over at once, and the first action is the
    pick's own."""
    from pytest_benchmarks.envs.libero.expert.pick import PickPlaceExpert
    from pytest_benchmarks.envs.libero.expert.pull import HandlePullExpert

    task = catalog.get("libero").select(["libero_90/2"])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, 10, 1000, obs="state", privileged=True))
    try:
        obs, _ = env.reset(seed=1000, options={"init_state": 0})
        pull, pick = env._expert.steps
        assert isinstance(pull, HandlePullExpert) and isinstance(pick, PickPlaceExpert)
        assert (pull.kind, pull.obj) == ("open", "wooden_cabinet_1_top_region")
        assert pull.holds() and pull.released and env._expert.index == 1
        alone = PickPlaceExpert(env._env.env, ("in", pick.obj, pick.target))
        alone.reset()
        np.testing.assert_array_equal(obs[lib.EXPERT_KEY], alone.act(obs["robot0_eef_pos"]))
    finally:
        env.close()


def test_the_finger_line_is_read_from_the_fingers_whatever_the_hands_yaw():
    """A push turns the hand; the step after it plans from the yaw the hand really has, and
    steering by the line brings a turned hand back along y."""
    from pytest_benchmarks.envs.libero.expert.constants import ON_LINE
    from pytest_benchmarks.envs.libero.expert.motion import FingerAxis, move

    task = catalog.get("libero").select(["libero_90/0"])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, 100, 0, obs="state"))
    along_y = np.array([0.0, 1.0, 0.0])
    try:
        env.reset(seed=0, options={"init_state": 0})
        fingers = FingerAxis(env._env.env)
        assert abs(fingers.yaw_to(along_y)) < 0.01  # LIBERO's home pose: fingers along y
        assert abs(abs(fingers.yaw_to(np.array([1.0, 0.0, 0.0]))) - np.pi / 2) < 0.01
        for _ in range(8):
            env.step(move(np.zeros(3), -1.0, yaw=0.3))
        turned = fingers.yaw_to(along_y)
        assert abs(turned) > 0.2
        # Made while the hand is turned, it still reads the same line.
        assert FingerAxis(env._env.env).yaw_to(along_y) == pytest.approx(turned, abs=1e-9)
        for _ in range(15):
            env.step(move(np.zeros(3), -1.0, yaw=fingers.yaw_to(along_y)))
        assert abs(fingers.yaw_to(along_y)) < ON_LINE
    finally:
        env.close()


def first_step(name: str) -> tuple[Any, Any]:
    """The expert's one pick-and-place step of a task as planned at initial state 0, and the
    object's world box then."""
    from pytest_benchmarks.envs.libero.expert.motion import body_box

    task = catalog.get("libero").select([name])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, 10, 1000, obs="state", privileged=True))
    try:
        env.reset(seed=1000, options={"init_state": 0})
        (step,) = env._expert.steps
        return step, body_box(env._env.env.sim, env._env.env.obj_body_id[step.obj])
    finally:
        env.close()


def test_the_hand_turns_a_quarter_where_a_cabinet_top_overhangs_the_object():
    """libero_90/30: the bowl stands beside the white cabinet, under the reach of its top along
    y; fingers along x clear it. libero_spatial/0's bowl has nothing above it: fingers along y,
    the grasp unchanged."""
    from pytest_benchmarks.api import evaluate

    turned = {}
    for name in ("libero_90/30", "libero_spatial/0"):
        step, box = first_step(name)
        turned[name] = step.turned
        if step.turned:  # the rim nearer the robot, the fingers closing along x
            assert step.grasp[0] == pytest.approx(box.low[0] + 0.012)
            assert step.grasp[1] == pytest.approx(box.centre[1])
        else:  # the far rim along y, as always
            assert step.grasp[1] == pytest.approx(box.high[1] - 0.012)
    assert turned == {"libero_90/30": True, "libero_spatial/0": False}
    run = evaluate("libero", "scripted", tasks=["libero_90/30"], episodes=1, obs="state", sync=True)
    assert run.results[0].episodes[0].success  # LIBERO's own check: the bowl is on the plate


@contextlib.contextmanager
def expert_episode(key: str, steps: int, index: int = 0) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A privileged LIBERO env of one task, reset to episode ``index`` (its seed and initial
    state as the harness gives them), closed afterwards."""
    task = catalog.get("libero").select([key])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, steps, 1000, obs="state", privileged=True))
    try:
        obs, _ = env.reset(seed=1000 + index, options={"init_state": index, "index": index})
        yield env, obs
    finally:
        env.close()


def run_expert(env: Any, obs: dict[str, Any], steps: int, watch: Any = None) -> bool:
    """Step a privileged LIBERO env with its expert's actions until LIBERO reports success;
    ``watch()`` is called after every step."""
    for _ in range(steps):
        obs, _, _, _, info = env.step(obs[lib.EXPERT_KEY])
        if watch is not None:
            watch()
        if info["success"]:
            return True
    return False


def test_into_a_drawer_under_a_cabinet_top_the_hand_turns_and_the_place_moves_out():
    """libero_90/24: the bowl into the white cabinet's open bottom drawer. Fingers along y, the
    hand (20 cm along them) would meet the cabinet's face above the drawer at the place: it
    turns a quarter (episode 0). In episode 2 the cabinet stands 1.6 cm nearer and the turned
    hand would meet the handle of the drawer above: the place moves out along the drawer, the
    bowl's origin kept inside the drawer's region, and LIBERO's own check ends the episode."""
    task = catalog.get("libero").select(["libero_90/24"])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, 400, 1000, obs="state", privileged=True))
    try:
        shifts = {}
        for episode in (0, 2):
            obs, _ = env.reset(
                seed=1000 + episode, options={"init_state": episode, "index": episode}
            )
            place = env._expert.steps[env._expert.index]  # the drawer was open: no pull
            assert place.target == "white_cabinet_1_bottom_region" and place.turned
            shifts[episode] = place.shift.copy()
        assert not np.any(shifts[0])
        assert shifts[2][0] == 0.0 and -0.05 < shifts[2][1] < 0.0  # out of the cabinet, along -y
        assert run_expert(env, obs, 400)
    finally:
        env.close()


def test_the_hand_passes_over_the_basket_it_just_filled():
    """libero_10/1: the cream cheese into the basket, then the butter beside it. Leaving the
    basket, the hand heads for the butter at its usual approach height, lower than the basket's
    rim: it must keep above the rim until clear of it, or its fingers catch the basket and drag
    it off. The basket stays where it stood, and LIBERO's own check ends the episode."""
    with expert_episode("libero_10/1", 520, 1) as (env, obs):
        problem = env._env.env
        basket = problem.obj_body_id["basket_1"]
        start = problem.sim.data.body_xpos[basket].copy()
        assert run_expert(env, obs, 520)
        assert np.linalg.norm(problem.sim.data.body_xpos[basket] - start) < 0.01


def test_a_drawer_under_an_overhanging_top_is_shut_by_a_leaned_push():
    """libero_90/22: the white cabinet's top overhangs its bottom drawer. Pushed with the hand
    upright, the forearm meets the top's edge and the drawer stops 4.5 cm open; the second push,
    the hand leaned forward into it by ``PUSH_LEAN`` more, shuts it: LIBERO's own check ends the
    episode."""
    from pytest_benchmarks.envs.libero.expert.constants import PUSH_LEAN

    with expert_episode("libero_90/22", 400) as (env, obs):
        (push,) = env._expert.steps
        tilts: dict[int, list[float]] = {1: [], 2: []}

        def watch() -> None:
            """How far the hand's straight-down direction at the start tilts from down."""
            if push.phase == "push":
                now = push.grip.orientation().as_matrix()
                pointing = now @ push.upright.as_matrix().T @ np.array([0.0, 0.0, -1.0])
                tilts[push.attempts].append(float(np.arccos(np.clip(-pointing[2], -1, 1))))

        assert run_expert(env, obs, 400, watch)
        assert push.attempts == 2  # the upright push did not shut it
        assert max(tilts[1]) < 0.3 < PUSH_LEAN < min(tilts[2])


def test_a_bowl_at_full_reach_to_go_a_little_back_is_taken_with_the_hand_tilted_too():
    """libero_90/16, episode 1: the bowl at the front stands 0.77 m from the arm's base, to go
    12 cm back onto the bowl in the middle. Taken straight down, the carry stalled with the
    elbow at its limit and the bowl was let go beside its target (the episode failed); tilted,
    the elbow stays bent while it carries and LIBERO's own check ends the episode."""
    from pytest_benchmarks.envs.libero.expert.constants import FAR_BACK, FAR_REACH

    with expert_episode("libero_90/16", 400, index=1) as (env, obs):
        (pick,) = env._expert.steps
        away = pick._from_base()
        place = pick._target()[0].centre[:2] + pick.offset_xy + pick.shift
        back = float((pick.grasp[:2] - place) @ away / np.linalg.norm(away))
        assert np.linalg.norm(away) > FAR_REACH and FAR_BACK < back < 0.25
        assert pick.tilted is not None
        problem = env._env.env
        elbow = problem.sim.model.get_joint_qpos_addr("robot0_joint4")
        limit = problem.sim.model.jnt_range[problem.sim.model.joint_name2id("robot0_joint4")][1]
        bends: list[float] = []

        def watch() -> None:
            from pytest_benchmarks.envs.libero.expert.pick import Phase

            if min(pick.phase, Phase.RETREAT) == Phase.CARRY:
                bends.append(limit - float(problem.sim.data.qpos[elbow]))

        assert run_expert(env, obs, 400, watch)
        assert bends and min(bends) > 0.2  # radians short of straight all the way


def test_a_mug_at_the_arms_full_reach_is_taken_with_the_hand_tilted():
    """libero_90/84: the mug stands 0.78 m from the arm's base. Taken with the hand straight
    down, the arm is straight there, its elbow at the joint's limit, and the carry back to the
    caddy stalls; tilted, the elbow stays bent through the grasp and LIBERO's own check ends
    the episode."""
    from pytest_benchmarks.envs.libero.expert.constants import FAR_REACH, REACH_TILT

    with expert_episode("libero_90/84", 400) as (env, obs):
        (pick,) = env._expert.steps
        problem = env._env.env
        base = problem.sim.data.body_xpos[problem.sim.model.body_name2id("robot0_base")]
        assert np.linalg.norm(pick.grasp[:2] - base[:2]) > FAR_REACH
        start = pick.grip.orientation()
        elbow = problem.sim.model.get_joint_qpos_addr("robot0_joint4")
        limit = problem.sim.model.jnt_range[problem.sim.model.joint_name2id("robot0_joint4")][1]
        bends: list[float] = []

        def watch() -> None:
            from pytest_benchmarks.envs.libero.expert.pick import Phase

            if pick.phase == Phase.CLOSE:
                bends.append(limit - float(problem.sim.data.qpos[elbow]))

        assert run_expert(env, obs, 400, watch)
        assert min(bends) > 0.5  # radians short of straight while it grasps
        tilt = (pick.grip.orientation() * start.inv()).magnitude()
        assert abs(tilt - REACH_TILT) < 0.1


def test_a_bottle_too_tall_for_the_drawer_is_laid_down_in_it():
    """libero_90/32: standing in the white cabinet's top drawer, the ketchup would hold its origin
    above the drawer's region, where LIBERO's ``In`` reads it. The expert lays it down once
    lifted; it comes to rest lying in the drawer, and LIBERO's own check ends the episode."""
    with expert_episode("libero_90/32", 400) as (env, obs):
        _, pick = env._expert.steps
        problem = env._env.env
        bottle = problem.obj_body_id["ketchup_1"]
        upright = problem.sim.data.xmat[bottle].reshape(3, 3).copy()
        assert run_expert(env, obs, 400)
        assert pick.laid is not None
        now = problem.sim.data.xmat[bottle].reshape(3, 3)
        # Its axis that stood upright now lies within 30 degrees of flat.
        standing = int(np.argmax(np.abs(upright[2])))
        assert abs(now[2, standing]) < np.sin(np.radians(30))


def test_a_book_goes_into_the_shelf_through_its_open_front():
    """libero_90/88: the shelf's upper space is covered by the shelf's top and open only toward
    the robot's side. The book, held with the hand pointing through the opening, goes in flat
    from the front: it never passes over the shelf's top, and LIBERO's own check ends the
    episode."""
    from pytest_benchmarks.envs.libero.expert.motion import body_box, region_box

    with expert_episode("libero_90/88", 400) as (env, obs):
        (pick,) = env._expert.steps
        problem = env._env.env
        book = problem.obj_body_id["yellow_book_1"]
        way, _ = pick.way
        assert np.allclose(way, [0.0, 1.0, 0.0])  # in along +y, the shelf's open side
        front = region_box(problem, "wooden_two_layer_shelf_1_top_region").low[1]  # open edge
        tops: list[float] = []

        def watch() -> None:
            if problem.sim.data.xpos[book][1] > front:  # the book's origin past the opening
                tops.append(float(body_box(problem.sim, book).high[2]))

        assert run_expert(env, obs, 400, watch)
        shelf_top = problem.sim.data.site_xpos[
            problem.sim.model.site_name2id("wooden_two_layer_shelf_1_top_side")
        ][2]
        assert tops and max(tops) < shelf_top
        assert pick.tip is None  # slid in held: the space's floor is a board, not the table


def test_a_book_under_a_shelf_too_low_for_the_hand_is_tipped_over_and_pushed_in():
    """libero_90/89: the shelf's lower space is 6.9 cm tall and its floor is the table; the hand,
    pointing in with its finger line upright, would reach into the table. The book is tilted
    toward the opening, its far edge set down before it and let go: it falls flat, and the
    closed fingers push it in by its near edge, the hand never entering the space. LIBERO's own
    check ends the episode."""
    from pytest_benchmarks.envs.libero.expert.motion import body_box, region_box

    with expert_episode("libero_90/89", 400) as (env, obs):
        (pick,) = env._expert.steps
        problem = env._env.env
        book = problem.obj_body_id[pick.obj]
        standing = body_box(problem.sim, book).size
        space = region_box(problem, pick.target)
        pushed: list[tuple[float, float]] = []

        def watch() -> None:
            if pick.tip is not None and pick.tip.phase == "push":
                height = float(body_box(problem.sim, book).size[2])
                pushed.append((height, float(pick.grip.position()[1])))

        assert run_expert(env, obs, 400, watch)
        assert pick.tip is not None
        assert standing[2] > space.size[2]  # standing, it is taller than the space
        heights, reach = zip(*pushed, strict=True)
        assert max(heights) < 0.6 * standing[2]  # lying flat as it is pushed
        assert max(reach) < space.low[1]  # the fingertips stay before the opening


def test_a_bowl_hemmed_in_by_a_drawer_is_taken_round_its_rim():
    """libero_spatial/4: the bowl stands in the wooden cabinet's open top drawer, 2 cm from its
    front. The usual grasp (fingers along y, on the far rim) puts the outer finger on the
    drawer; the grasp goes round the rim to where the open gripper meets nothing, and LIBERO's
    own check ends the episode. libero_spatial/0's bowl, on the open table, keeps the usual
    grasp."""
    from pytest_benchmarks.envs.libero.expert.constants import RIM_IN
    from pytest_benchmarks.envs.libero.expert.motion import body_box
    from pytest_benchmarks.envs.libero.expert.pick_plan import ALONG_Y
    from pytest_benchmarks.envs.libero.expert.rim import fingers_meet, gripper_meets

    with expert_episode("libero_spatial/4", 280, index=1) as (env, obs):
        (pick,) = env._expert.steps
        problem = env._env.env
        box = body_box(problem.sim, problem.obj_body_id[pick.obj])
        usual = pick._grasp_point(box, 1)  # fingers along y, on the far rim
        scene = pick.scene()
        assert fingers_meet(scene, usual, ALONG_Y)
        assert not gripper_meets(scene, pick.grasp, pick.line)
        assert pick.steer and abs(pick.line @ ALONG_Y) < 0.9  # turned well off y
        assert np.linalg.norm(pick.grasp[:2] - box.centre[:2]) == pytest.approx(
            box.size[1] / 2 - RIM_IN
        )
        assert run_expert(env, obs, 280)
    with expert_episode("libero_spatial/0", 280) as (env, _):
        (pick,) = env._expert.steps
        assert pick.line is ALONG_Y and not pick.steer


def test_a_grasp_across_a_flat_box_slides_away_from_a_bottle_beside_it():
    """libero_object/1: the tomato sauce stands within the hand's reach of the cream cheese box's
    centre; the grasp slides along the box, away from it, and the episode ends in LIBERO's
    success. libero_object/0's soup can has nothing beside it: the centre, as always."""
    from pytest_benchmarks.api import evaluate

    slid = {}
    for name in ("libero_object/1", "libero_object/0"):
        step, box = first_step(name)
        assert not step.turned and step.grasp[1] == pytest.approx(box.centre[1])
        assert box.low[0] + 0.012 <= step.grasp[0] <= box.high[0] - 0.012
        slid[name] = round(float(step.grasp[0] - box.centre[0]), 3)
    # The sauce stands at +x of the box: the hand moves toward -x.
    assert slid["libero_object/1"] < -0.015 and slid["libero_object/0"] == 0.0
    run = evaluate("libero", "scripted", tasks=["libero_object/1"], episodes=1, obs="state",
                   sync=True)  # fmt: skip
    assert run.results[0].episodes[0].success


def test_a_slanted_book_is_taken_across_its_spine_and_turned_into_its_caddy_slot():
    """libero_10/5: the book stands at a slant, too wide for the fingers along either world
    axis; the fingers close across its own thickness. The caddy's back slot is 6 cm deep along
    x and the book 11 cm wide: it is carried turned, its thickness along x, to a place in the
    region, and LIBERO's own check ends the episode. The basket of
    libero_object/0 is no compartment: its centre, the line unchanged."""
    from pytest_benchmarks.api import evaluate
    from pytest_benchmarks.envs.libero.expert.constants import GRIPPER_SPAN
    from pytest_benchmarks.envs.libero.expert.motion import body_box
    from pytest_benchmarks.envs.libero.expert.pick_plan import ALONG_X, ALONG_Y

    task = catalog.get("libero").select(["libero_10/5"])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, 10, 1000, obs="state", privileged=True))
    try:
        env.reset(seed=1000, options={"init_state": 0})
        (step,) = env._expert.steps
        box = body_box(env._env.env.sim, env._env.env.obj_body_id[step.obj])
        region = step._target()[1]
    finally:
        env.close()
    assert min(box.size[:2]) > GRIPPER_SPAN
    assert abs(step.line @ ALONG_X) < 0.95 and abs(step.line @ ALONG_Y) < 0.95
    assert abs(step.place_line @ ALONG_X) == pytest.approx(1.0)
    assert region is not None and region.size[0] < 0.06 < region.size[1]
    assert np.all(region.low[:2] <= step.slot) and np.all(step.slot <= region.high[:2])
    basket, _ = first_step("libero_object/0")
    assert basket.slot is None and basket.place_line is basket.line
    run = evaluate("libero", "scripted", tasks=["libero_10/5"], episodes=1, obs="state",
                   sync=True)  # fmt: skip
    assert run.results[0].episodes[0].success


def test_a_bowl_under_the_opened_drawer_is_taken_with_the_hand_tilted():
    """libero_goal/3, episode 3: the top drawer, pulled open, stands 10 cm over half the bowl to
    be put in it. Pointing straight down, the hand meets the drawer wherever round the rim it
    closes; tilted, its wrist leaning back out from under, it does not. So the bowl is not moved
    aside first (the plan, made with the drawer set open for the moment, finds the tilted grasp):
    the drawer is pulled, the bowl taken from under it, and LIBERO's own check ends the episode
    within the suite's 300 steps, the hand never touching the cabinet once the drawer is open."""
    from pytest_benchmarks.envs.libero.expert.aside import AsideExpert
    from pytest_benchmarks.envs.libero.expert.constants import UNDER_TILTS
    from pytest_benchmarks.envs.libero.expert.motion import body_box, body_tree
    from pytest_benchmarks.envs.libero.expert.pick_scene import ROBOT_PARTS
    from pytest_benchmarks.envs.libero.expert.rim import gripper_meets
    from pytest_benchmarks.envs.libero.tasks import MAX_STEPS

    with expert_episode("libero_goal/3", MAX_STEPS["libero_goal"], index=3) as (env, obs):
        aside, pull, pick = env._expert.steps
        problem = env._env.env
        model, data = problem.sim.model._model, problem.sim.data._data
        assert isinstance(aside, AsideExpert) and aside.released  # nothing to move
        bowl = problem.obj_body_id[pick.obj]
        standing = data.xpos[bowl].copy()
        cabinet = body_tree(
            model, problem.obj_body_id[problem.object_sites_dict[pull.obj].parent_name]
        )
        robot = {
            b
            for b in range(model.nbody)
            if (problem.sim.model.body_id2name(b) or "").startswith(ROBOT_PARTS)
        }
        planned, touched, moved = [], [], []

        def watch() -> None:
            if env._expert.index == 1:
                moved.append(float(np.linalg.norm(data.xpos[bowl] - standing)))
            if env._expert.index != 2:
                return
            if not planned:  # the pick, planned with the drawer open
                usual = pick._grasp_point(body_box(problem.sim, bowl), 1)
                planned.append(gripper_meets(pick.scene(), usual, np.array([0.0, 1.0, 0.0])))
            for contact in data.contact[: data.ncon]:
                pair = {model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]}
                if pair & robot and pair & cabinet:
                    from pytest_benchmarks.envs.libero.expert.pick import Phase

                    touched.append(Phase(pick.phase).name)

        assert run_expert(env, obs, MAX_STEPS["libero_goal"], watch)
        assert max(moved) < 0.005  # the drawer pulled open over the bowl, not into it
        assert planned == [True]  # straight down, the hand would meet the scene
        tilt = (pick.under * pick.upright.inv()).magnitude()
        assert UNDER_TILTS[0] - 0.05 < tilt < UNDER_TILTS[-1] + 0.05
        assert not touched


def test_a_drawer_whose_handle_is_too_low_to_take_is_dragged_open_by_its_top():
    """libero_90/6: the bottom drawer's handle is 4.6 cm above the table, 5.3 cm under the middle
    drawer's. The hand turned upright about it would reach into the table, so the closed fingers
    press on the bar's top and drag it out: every touch of the drawer is from above (none that
    pinches or hooks the bar), the bowl before the drawer stays where it stood, and LIBERO's own
    check ends the episode within the suite's steps. libero_goal/0's middle drawer is pulled by
    its handle as before."""
    from pytest_benchmarks.envs.libero.expert.drag import HandleDragExpert, handle_too_low
    from pytest_benchmarks.envs.libero.tasks import MAX_STEPS

    with expert_episode("libero_goal/0", 10) as (env, _):
        assert not handle_too_low(env._env.env, "wooden_cabinet_1_middle_region")
    with expert_episode("libero_90/6", MAX_STEPS["libero_90"]) as (env, obs):
        (drag,) = env._expert.steps
        assert isinstance(drag, HandleDragExpert)
        problem = env._env.env
        model, data = problem.sim.model._model, problem.sim.data._data
        bowl = problem.obj_body_id["akita_black_bowl_1"]
        standing = data.xpos[bowl].copy()
        fingers = {problem.sim.model.body_name2id(f"gripper0_{s}finger") for s in ("left", "right")}
        normals = []

        def watch() -> None:
            for contact in data.contact[: data.ncon]:
                pair = {model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]}
                if drag.body in pair and pair & fingers:
                    normals.append(abs(float(contact.frame[2])))

        assert run_expert(env, obs, MAX_STEPS["libero_90"], watch)
        assert normals and min(normals) > 0.9  # pressed on from above, never hooked or pinched
        assert float(np.linalg.norm(data.xpos[bowl] - standing)) < 0.005


def test_an_object_too_long_to_take_turned_is_turned_a_quarter_on_its_way_into_a_drawer():
    """libero_90/5, episode 4: the pudding (8 cm along x, 4.6 along y) into the open top drawer,
    where the hand with its fingers along y would meet the cabinet. Turned to fingers along x,
    the open fingers (7.5 cm) cannot take it: it is taken along y and turned a quarter as it is
    carried, its origin steered to its place, and LIBERO's own check ends the episode (before,
    the turned hand closed on its end and never lifted it)."""
    from scipy.spatial.transform import Rotation

    from pytest_benchmarks.envs.libero.expert.constants import GRIPPER_SPAN
    from pytest_benchmarks.envs.libero.expert.motion import body_box
    from pytest_benchmarks.envs.libero.expert.pick_plan import ALONG_X, ALONG_Y
    from pytest_benchmarks.envs.libero.tasks import MAX_STEPS

    with expert_episode("libero_90/5", MAX_STEPS["libero_90"], index=4) as (env, obs):
        problem = env._env.env
        pull, pick = env._expert.steps[:2]
        assert pull.holds()  # the drawer stands open: the plan goes on to the pick at once
        pick.reset()  # and plans it as here
        body = problem.obj_body_id[pick.obj]
        box = body_box(problem.sim, body)
        assert box.size[0] > GRIPPER_SPAN >= box.size[1]
        assert pick.quarter is not None and not pick.turned
        assert pick.line is ALONG_Y and pick.place_line is ALONG_X
        before = Rotation.from_matrix(problem.sim.data._data.xmat[body].reshape(3, 3))
        assert run_expert(env, obs, MAX_STEPS["libero_90"])
        after = Rotation.from_matrix(problem.sim.data._data.xmat[body].reshape(3, 3))
        yaw = abs(float((after * before.inv()).as_euler("xyz")[2]))
        assert abs(yaw - np.pi / 2) < 0.3


def test_a_hand_held_up_by_the_arm_on_a_cabinet_top_leans_away_and_comes_down_again():
    """libero_90/30, episode 2: the bowl stands 4.5 cm beside the white cabinet, whose top is
    10-17 cm over its rim. Coming down to the rim, the arm's forearm rests on the cabinet's top
    with the fingers 3 cm short of the grasp; the hand rises and comes down again tilted about
    its finger line, fingertips toward the cabinet, and LIBERO's own check ends the episode.
    Episode 0's bowl stands 2.6 cm farther off: the arm touches nothing, the hand never tilts."""
    from pytest_benchmarks.envs.libero.expert.constants import LEAN
    from pytest_benchmarks.envs.libero.tasks import MAX_STEPS

    leaned = {}
    for index in (2, 0):
        with expert_episode("libero_90/30", MAX_STEPS["libero_90"], index) as (env, obs):
            (pick,) = env._expert.steps
            assert pick.tilted is None
            assert run_expert(env, obs, MAX_STEPS["libero_90"])
            leaned[index] = pick.tilted
            if pick.tilted is not None:
                cabinet = env._env.env.sim.data.body_xpos[
                    env._env.env.obj_body_id["white_cabinet_1"]
                ]
                # The grip site's z axis points toward the fingertips.
                tips = pick.tilted.apply([0.0, 0.0, 1.0])
                assert float(np.arccos(-tips[2])) == pytest.approx(LEAN, abs=1e-6)
                assert tips[:2] @ (cabinet[:2] - pick.grasp[:2]) > 0
    assert leaned[2] is not None and leaned[0] is None


def test_a_bowl_the_drawer_would_overhang_is_moved_out_of_its_way_first():
    """libero_90/8: the top drawer, pulled open, would stand over the bowl to be put in it. The
    plan moves the bowl first, clear of where the drawer will stand, then pulls the drawer and
    fills it; LIBERO's own check ends the episode. libero_90/2's drawer is open already: no move.
    libero_goal/3's bowl has a wine bottle on one side and the clear side beyond the drawer lies
    past the arm's reach: the spot it would go to also steps across, to a place the arm reaches
    (it stays where it stands: it is taken from under the drawer, as the test before shows)."""
    from pytest_benchmarks.api import evaluate
    from pytest_benchmarks.envs.libero.expert.aside import AsideExpert
    from pytest_benchmarks.envs.libero.expert.constants import FAR_REACH
    from pytest_benchmarks.envs.libero.expert.motion import body_box
    from pytest_benchmarks.envs.libero.expert.pick import PickPlaceExpert
    from pytest_benchmarks.envs.libero.expert.pull import HandlePullExpert, opened_box

    plans, spots = {}, {}
    for name in ("libero_90/8", "libero_90/2", "libero_goal/3"):
        task = catalog.get("libero").select([name])[0]
        env = lib.LiberoTaskEnv(EnvConfig(task, 10, 1000, obs="state", privileged=True))
        try:
            env.reset(seed=1000, options={"init_state": 0})
            steps = env._expert.steps
            plans[name] = [type(step) for step in steps]
            if isinstance(steps[0], AsideExpert):  # the bowl's box at the spot, the drawer open
                drawer, _ = opened_box(env._env.env, steps[1].obj)
                problem = env._env.env
                half = body_box(problem.sim, problem.obj_body_id[steps[0].obj]).size[:2] / 2
                spot = steps[0]._spot().centre[:2]  # where it goes, if it is moved
                assert np.any((spot + half < drawer.low[:2]) | (spot - half > drawer.high[:2]))
                assert np.linalg.norm(spot - steps[0]._base()) <= FAR_REACH
                bowl = body_box(problem.sim, problem.obj_body_id[steps[0].obj])
                spots[name] = spot - bowl.centre[:2]
        finally:
            env.close()
    assert plans["libero_90/8"][:2] == [AsideExpert, HandlePullExpert]
    assert plans["libero_goal/3"] == [AsideExpert, HandlePullExpert, PickPlaceExpert]
    # Along one axis where that is free and reached; libero_goal/3's toward the arm, stepped
    # across past the wine bottle.
    assert spots["libero_90/8"][0] == pytest.approx(0.0, abs=1e-9)
    assert spots["libero_goal/3"][0] < 0.0 and spots["libero_goal/3"][1] > 0.0
    assert AsideExpert not in plans["libero_90/2"]
    run = evaluate("libero", "scripted", tasks=["libero_90/8"], episodes=1, obs="state",
                   sync=True)  # fmt: skip
    assert run.results[0].episodes[0].success


def test_a_moka_pot_is_taken_by_its_handle():
    """libero_90/19: the moka pot is wider than the open fingers every way and its lid is shut;
    its handle stands out on one side, thin across x: the hand turns, the fingers close across
    the handle, and the pot ends on the stove by LIBERO's own check."""
    from pytest_benchmarks.api import evaluate
    from pytest_benchmarks.envs.libero.expert.constants import GRIPPER_SPAN
    from pytest_benchmarks.envs.libero.expert.motion import body_box

    task = catalog.get("libero").select(["libero_90/19"])[0]
    env = lib.LiberoTaskEnv(EnvConfig(task, 10, 1000, obs="state", privileged=True))
    try:
        env.reset(seed=1000, options={"init_state": 0})
        (step,) = env._expert.steps
        problem = env._env.env
        box = body_box(problem.sim, problem.obj_body_id[step.obj])
        assert min(box.size[:2]) > GRIPPER_SPAN
        centre = problem.sim.data.xipos[problem.obj_body_id[step.obj]]
        # The grasp stands well off the pot's centre of mass, on the handle, fingers along x.
        assert np.linalg.norm(step.grasp[:2] - centre[:2]) > 0.05
        assert step.turned and step.steer
    finally:
        env.close()
    run = evaluate("libero", "scripted", tasks=["libero_90/19"], episodes=1, obs="state",
                   sync=True)  # fmt: skip
    assert run.results[0].episodes[0].success


def test_a_frying_pan_held_by_its_handle_goes_under_the_shelf_as_it_hangs():
    """libero_90/42: the frying pan under the shelf's middle board, a space 6.9 cm tall open
    only at its front. Held by its handle with its body ahead of the fingertips along the way
    in, it goes in as it hangs: the hand keeps the orientation it took the handle with (turned
    to point in, the pan stood on its edge and caught on the shelf), the pan stays level, and
    LIBERO's own check ends the episode."""
    from scipy.spatial.transform import Rotation

    with expert_episode("libero_90/42", 400) as (env, obs):
        (step,) = env._expert.steps
        assert step.by_handle and step.way is not None  # by the handle, into a covered space
        problem = env._env.env
        pan = problem.obj_body_id[step.obj]

        def pose() -> Rotation:
            return Rotation.from_quat(problem.sim.data.xquat[pan][[1, 2, 3, 0]])  # w last

        up = pose().inv().apply([0.0, 0.0, 1.0])  # the pan's own axis that stands up at rest
        tilts, pointing = [], []

        def watch() -> None:
            if step.slide is not None:  # on its way in
                tilts.append(float(np.degrees(np.arccos(np.clip(pose().apply(up)[2], -1, 1)))))
                pointing.append(float(step.grip.orientation().apply([0.0, 0.0, 1.0])[2]))

        assert run_expert(env, obs, 400, watch)
        assert tilts and max(tilts) < 20.0  # about level: never stood on its edge
        assert max(pointing) < -0.9  # the hand pointing down all the way in


def test_a_frying_pan_handle_with_a_moka_pot_beside_it_is_taken_clear_of_the_pot():
    """libero_90/18, episode 0: the moka pot stands 0.7 cm beside the frying pan's handle, and
    the hand, square across the handle at its middle, came down on the pot (the episode failed).
    The grasp slides along the handle, turned off square where needed, to where the open
    gripper meets nothing; the hand never touches the pot; the pan, steered by its origin (what
    LIBERO's check reads) however it swings in the fingers, ends on the stove by LIBERO's own
    check, its origin inside the cook region."""
    import mujoco

    from pytest_benchmarks.envs.libero.expert.motion import region_box
    from pytest_benchmarks.envs.libero.expert.rim import gripper_meets

    with expert_episode("libero_90/18", 400) as (env, obs):
        (step,) = env._expert.steps
        problem = env._env.env
        model, data = problem.sim.model._model, problem.sim.data._data
        handle = step._handle()
        assert step.by_handle
        square = np.array([1.0, 0.0, 0.0]) if step.turned else np.array([0.0, 1.0, 0.0])
        assert gripper_meets(step.scene(), handle.centre, square)  # at its middle: on the pot
        assert not gripper_meets(step.scene(), step.grasp, step.line)
        assert np.all(handle.low[:2] <= step.grasp[:2])
        assert np.all(step.grasp[:2] <= handle.high[:2])
        pot = problem.obj_body_id["moka_pot_1"]
        robot = {
            b for b in range(model.nbody)
            if mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b).startswith("gripper0_")
        }  # fmt: skip
        touched = []

        def watch() -> None:
            for contact in data.contact[: data.ncon]:
                bodies = {model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]}
                if pot in bodies and bodies & robot:
                    touched.append(bodies)

        assert run_expert(env, obs, 400, watch)
        assert not touched
        cook = region_box(problem, step.target)
        origin = data.xpos[problem.obj_body_id[step.obj]]
        assert np.all(cook.low[:2] < origin[:2]) and np.all(origin[:2] < cook.high[:2])


def test_a_flat_box_beside_a_tall_carton_is_taken_clear_of_the_carton():
    """libero_10/1, episode 4: the milk carton (13 cm tall) stands 3 cm beside the cream cheese
    (1.8 cm). Coming in 10 cm above the grasp, below the carton's top, the open finger struck the
    carton and came to rest on it, and square across the box, wherever along it, the hand's palm
    reaches over the carton: the descent never reached the grasp (the episode failed). The hand
    comes in over the carton's top, down to a grasp turned off square where the open gripper
    meets nothing, the carton left where it stood, and LIBERO's own check ends the episode with
    both in the basket."""
    from scipy.spatial.transform import Rotation

    from pytest_benchmarks.envs.libero.expert.constants import CLEARANCE, OVER, SUPPORT
    from pytest_benchmarks.envs.libero.expert.motion import body_box
    from pytest_benchmarks.envs.libero.expert.rim import gripper_meets

    with expert_episode("libero_10/1", 520, index=4) as (env, obs):
        first = env._expert.steps[0]
        problem = env._env.env
        data = problem.sim.data._data
        milk = problem.obj_body_id["milk_1"]
        assert first.obj == "cream_cheese_1"
        box = body_box(problem.sim, problem.obj_body_id[first.obj])
        top = body_box(problem.sim, milk).high[2]
        assert top > first.grasp[2] + CLEARANCE  # the usual approach passes below its top
        assert first.over_beside == pytest.approx(top + OVER, abs=0.002)
        scene = first.scene().above(box.low[2] + SUPPORT)
        square = np.array([0.0, 1.0, 0.0])
        assert gripper_meets(scene, first._grasp_point(box, 1), square)
        assert abs(float(first.line @ square)) < np.cos(np.radians(10))  # turned off square
        assert not gripper_meets(scene, first.grasp, first.line)
        standing, pose = data.xpos[milk].copy(), data.xmat[milk].reshape(3, 3).copy()
        moved, tipped, reached = [], [], []

        def watch() -> None:
            from pytest_benchmarks.envs.libero.expert.pick import Phase

            if env._expert.index or first.phase not in (Phase.DESCEND, Phase.CLOSE):
                return
            moved.append(float(np.linalg.norm(data.xpos[milk][:2] - standing[:2])))
            turn = pose.T @ data.xmat[milk].reshape(3, 3)
            tipped.append(float(Rotation.from_matrix(turn).magnitude()))
            reached.append(float(np.linalg.norm(first.grip.position() - first.grasp)))

        assert run_expert(env, obs, 520, watch)
        assert max(moved) < 0.005 and max(tipped) < 0.05  # left standing where it stood
        assert min(reached) < 0.01  # down at the grasp, not resting on the carton


def test_a_mug_is_carried_over_the_caddy_corner_on_its_way():
    """libero_90/85, episode 5: the mug goes to the right of the desk caddy, and the straight
    way there passes the caddy's corner. Carried at the usual height, the mug's bottom is below
    the caddy's top: it struck the corner and fell out of the fingers (the episode failed). The
    hand carries it higher, its bottom over the caddy, which it never touches, and LIBERO's own
    check ends the episode."""
    from pytest_benchmarks.envs.libero.expert.constants import CLEARANCE, OVER
    from pytest_benchmarks.envs.libero.expert.motion import body_box, body_tree

    with expert_episode("libero_90/85", 150, index=5) as (env, obs):
        step = env._expert.steps[0]
        problem = env._env.env
        model, data = problem.sim.model._model, problem.sim.data._data
        mug, caddy_id = problem.obj_body_id[step.obj], problem.obj_body_id["desk_caddy_1"]
        caddy = body_tree(model, caddy_id)
        top = body_box(problem.sim, caddy_id).high[2]
        usual = max(step.grasp[2] + CLEARANCE, step._target()[0].high[2] + step.below_grasp + 0.07)
        assert usual - step.below_grasp < top  # the usual carry: the mug's bottom below its top
        assert step.over_way == pytest.approx(top + OVER + step.below_grasp, abs=0.002)
        struck = []

        def watch() -> None:
            for contact in data.contact[: data.ncon]:
                bodies = {model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]}
                if mug in bodies and bodies & caddy:
                    from pytest_benchmarks.envs.libero.expert.pick import Phase

                    struck.append(Phase(step.phase).name)

        assert run_expert(env, obs, 150, watch)
        assert not struck


def test_the_second_moka_pot_goes_beside_the_first_on_the_one_stove():
    """libero_10/8: both moka pots onto the stove's cook region. The first goes where a single
    pot goes; the second, planned once the first stands there, goes to the nearest place beside
    it inside the region, and the episode ends on LIBERO's own check with the two apart."""
    from pytest_benchmarks.envs.libero.expert.motion import body_box

    with expert_episode("libero_10/8", 520) as (env, obs):
        first, second, _ = env._expert.steps
        assert not np.any(first.shift)  # nothing on the stove yet: the usual place
        assert run_expert(env, obs, 520)
        assert np.linalg.norm(second.shift) > 0.05  # clear of the first pot
        problem = env._env.env
        one, two = (body_box(problem.sim, problem.obj_body_id[s.obj]) for s in (first, second))
        assert np.any(one.high[:2] < two.low[:2]) or np.any(two.high[:2] < one.low[:2])


def test_scripted_expert_succeeds_through_pytest(pytester: pytest.Pytester):
    """One state-only episode of the scripted expert per suite, through the harness; a task it
    does not cover is skipped at collection with the reason."""
    pytester.makeconftest(LEFT_OUT)
    pytester.makepyfile(
        """
import pytest
from pytest_benchmarks import check_success_rate

pytestmark = pytest.mark.benchmark_env("libero")

def test_success_rate(evaluate):
    check_success_rate(evaluate())
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rs", "--benchmark-obs=state", "--benchmark-episodes=1",
        "--benchmark-task=libero_spatial/0,libero_object/0,libero_goal/0,libero_90/6",
        "-n", "2",
    )  # fmt: skip
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(
        ["*libero/libero_90/6: no scripted expert: left out by this test's conftest*"]
    )
    document = json.loads((pytester.path / "benchmark-results" / "metrics.json").read_text())
    assert {r["id"]: r["successes"] for r in document["results"]} == {
        "libero/libero_spatial/0": 1,
        "libero/libero_object/0": 1,
        "libero/libero_goal/0": 1,
    }
    assert document["results"][0]["policy"]["id"] == "pytest_benchmarks.PickPlaceExpert"


def test_a_users_own_config_is_used_as_it_is(tmp_path):
    """LIBERO_CONFIG_PATH of the user's own, holding a valid config.yaml: read, never rewritten,
    and no config of the harness's own is laid down."""
    from pytest_benchmarks.envs.libero.setup import write_config

    mine = tmp_path / "mine"
    mine.mkdir()
    config = write_config(mine)
    text = config.read_text().replace(str(mine / "datasets"), "/data/my-libero-datasets")
    config.write_text("# my own LIBERO config\n" + text)
    before = config.read_bytes()
    env = {**_clean_env(str(tmp_path / "home")), "LIBERO_CONFIG_PATH": str(mine)}
    script = (
        "from pytest_benchmarks.envs.libero.__main__ import check; print(check());"
        "from libero.libero import get_libero_path; print(get_libero_path('datasets'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, datasets = done.stdout.strip().splitlines()[-2:]
    assert "libero/libero_spatial/0" in loaded
    assert datasets == "/data/my-libero-datasets"
    assert config.read_bytes() == before
    assert not (tmp_path / "home" / ".cache" / "pytest-benchmarks").exists()


def test_expert_traces_match_run_to_run_and_a_difference_is_named(tmp_path):
    """scripts/expert_traces.py, the check that a change left the expert's actions alone: two
    runs of the same code compare equal; an edited digest is named and the exit code is 1."""
    script = [sys.executable, "scripts/expert_traces.py"]
    args = ["--tasks", "libero_goal/0", "--episodes", "2", "--max-steps", "30"]
    for name in ("a.json", "b.json"):
        done = subprocess.run([*script, str(tmp_path / name), *args], capture_output=True,
                              text=True, timeout=600, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    same = subprocess.run([*script, "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert (same.returncode, same.stdout.strip()) == (0, "same: 1 tasks")
    traces = json.loads((tmp_path / "a.json").read_text())
    assert traces["libero_goal/0"]["experts"] == ["HandlePullExpert"]
    assert [e["steps"] for e in traces["libero_goal/0"]["episodes"]] == [30, 30]
    traces["libero_goal/0"]["episodes"][1]["sha256"] = "0" * 64
    (tmp_path / "b.json").write_text(json.dumps(traces))
    changed = subprocess.run([*script, "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert changed.returncode == 1
    assert changed.stdout.startswith("libero_goal/0 episode 1: {'sha256': ")
