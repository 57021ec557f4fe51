"""Local debugging: rerun chosen episodes exactly, the rerun command on failure, progress lines,
per-step traces and episode videos."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from helpers import outcomes, read_metrics, run

CHECKED = """
import pytest
from pytest_benchmarks import check_success_rate

pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    assert evaluate().error is None

def test_success_rate(evaluate):
    check_success_rate(evaluate())
"""


def test_episode_rerun_reproduces_the_full_run(toy_project: pytest.Pytester):
    full = toy_project.path / "full.json"
    run(toy_project, "--benchmark-episodes=9", f"--benchmark-metrics={full}", "-n", "2",
        "--benchmark-max-steps=24").assert_outcomes(passed=4)  # fmt: skip
    again = toy_project.path / "again.json"
    result = run(toy_project, "--benchmark-episode=7,2", f"--benchmark-metrics={again}",
                 "--benchmark-max-steps=24")  # fmt: skip
    result.assert_outcomes(passed=4)
    rerun = read_metrics(again)
    row = rerun["results"][0]
    assert [e["index"] for e in row["episodes"]] == [2, 7]
    assert row["batch_size"] == 1 and row["planned_episodes"] == 2
    whole = outcomes(read_metrics(full))
    for task, episodes in outcomes(rerun).items():
        assert episodes == [whole[task][2], whole[task][7]]


def test_a_failing_success_check_prints_a_command_that_reproduces(toy_project: pytest.Pytester):
    toy_project.makepyfile(test_toy=CHECKED)
    full = toy_project.path / "full.json"
    result = run(toy_project, "--benchmark-max-steps=5", "--benchmark-episodes=6",
                 f"--benchmark-metrics={full}")  # fmt: skip
    # stroll never arrives in 5 steps; walk does from initial state 0 only.
    result.assert_outcomes(passed=3, failed=1)
    line = next(
        line for line in result.stdout.lines if "toy/stroll: 0/6 episodes succeeded; rerun" in line
    )
    command = line.split("rerun the worst: ", 1)[1]
    assert "--benchmark-task=toy/stroll" in command and "--benchmark-max-steps=5" in command
    # Stroll starts further back at higher initial states: the worst are 3, 2, then 1 (and 5).
    assert command.endswith("--benchmark-episode=1,2,3")
    args = shlex.split(command)
    assert args[0] == "pytest"
    again = toy_project.path / "again.json"
    rerun = run(toy_project, *args[1:], f"--benchmark-metrics={again}")
    rerun.assert_outcomes(passed=1, failed=1)  # the same check fails on the same episodes
    whole = outcomes(read_metrics(full))["toy/stroll"]
    assert outcomes(read_metrics(again))["toy/stroll"] == [whole[1], whole[2], whole[3]]


def test_progress_lines_with_and_without_xdist(toy_project: pytest.Pytester):
    for extra in ([], ["-n", "2"]):
        result = run(toy_project, "--benchmark-episodes=4", "--benchmark-progress=0", *extra)
        result.assert_outcomes(passed=4)  # progress reports count as no test
        prefix = r"\[gw\d\] " if extra else ""
        lines = [line for line in result.stdout.lines if "episodes," in line]
        pattern = re.compile(rf"^{prefix}toy/(walk|stroll): (\d)/4 episodes, \d successes, \d+ s$")
        assert len(lines) == 8, result.stdout.str()
        assert all(pattern.match(line) for line in lines), lines
        assert {pattern.match(line).group(2) for line in lines} == {"1", "2", "3", "4"}


def test_debug_runs_one_env_in_process_and_traces_every_step(toy_project: pytest.Pytester):
    result = run(
        toy_project, "--benchmark-debug", "--benchmark-episodes=3", "--benchmark-task=walk"
    )
    result.assert_outcomes(passed=2)
    row = read_metrics(toy_project.path / "benchmark-results" / "metrics.json")["results"][0]
    assert row["batch_size"] == 1
    trace = toy_project.path / "benchmark-results" / "traces" / "toy" / "walk.jsonl"
    steps = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(steps) == sum(e["steps"] for e in row["episodes"]) == 5 + 6 + 6
    # The corridor's reward is -|1 - x|; the walker moves 0.2 per step from x = 0.
    assert steps[0] == {"episode": 0, "step": 1, "action": [1.0], "reward": pytest.approx(-0.8),
                        "success": False}  # fmt: skip
    for episode in row["episodes"]:
        rewards = [s["reward"] for s in steps if s["episode"] == episode["index"]]
        assert sum(rewards) == pytest.approx(episode["sum_reward"])
    assert steps[4]["success"] is True and steps[5]["episode"] == 1


def test_bad_debugging_options_are_one_line(toy_project: pytest.Pytester):
    for args, message in (
        (
            ["--benchmark-episode=3,x"],
            "--benchmark-episode: '3,x' is not a list of episode indices >= 0 (e.g. 3,7)",
        ),
        (["--benchmark-video=some"], "--benchmark-video: 'some' is not one of none, failures, all"),
        (["--benchmark-progress=-1"], "--benchmark-progress: '-1' is not a number of seconds >= 0"),
    ):
        result = run(toy_project, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_metaworld_videos_decode_to_every_frame(pytester: pytest.Pytester):
    import imageio.v3 as iio

    pytester.makepyfile(
        test_mw="""
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().error is None
"""
    )
    # A directory where one video should go: its encode fails, its episode's result stands.
    blocked = pytester.path / "benchmark-results/videos/metaworld/push-v3/episode_0001.mp4"
    blocked.mkdir(parents=True)
    result = run(pytester, "--benchmark-task=reach-v3,push-v3", "--benchmark-episodes=2",
                 "--benchmark-max-steps=20", "--benchmark-video=failures",
                 "--benchmark-image-size=64", "--benchmark-batch-size=2")  # fmt: skip
    result.assert_outcomes(passed=2)
    document = read_metrics(pytester.path / "benchmark-results" / "metrics.json")
    episodes = {(r["id"], e["index"]): e for r in document["results"] for e in r["episodes"]}
    videos = 0
    for (task, index), e in episodes.items():
        if e["success"]:  # failures only
            assert e["video"] is None
            continue
        path = pytester.path / "benchmark-results" / "videos" / task / f"episode_{index:04d}.mp4"
        if path == blocked:
            assert e["video"] is None and e["steps"] == 20
            assert e["video_error"].startswith("OSError: ")  # ffmpeg could not write there
            continue
        assert e["video"] == str(path) and e["video_error"] is None
        frames = iio.imread(path)
        assert frames.shape == (e["steps"] + 1, 64, 64, 3)  # the reset frame and every step
        assert frames.std() > 5  # a scene, not a blank frame
        videos += 1
    assert videos >= 1  # push-v3 cannot finish in 20 steps
    # --benchmark-video=all: every episode, successes too, at 30 fps.
    result = run(pytester, "--benchmark-task=reach-v3", "--benchmark-episodes=1",
                 "--benchmark-video=all", "--benchmark-image-size=64",
                 "--benchmark-metrics=all.json")  # fmt: skip
    result.assert_outcomes(passed=1)
    (row,) = read_metrics(pytester.path / "all.json")["results"]
    assert all(e["success"] for e in row["episodes"])  # a success gets its video too
    for e in row["episodes"]:
        assert e["video"] is not None and e["video_error"] is None
        assert iio.immeta(e["video"])["fps"] == 30
        assert len(iio.imread(e["video"])) == e["steps"] + 1
