"""``--benchmark-record``: episodes as a LeRobotDataset, written by LeRobot's own writer.

Real pytest sessions (with and without xdist) record Meta-World and LIBERO episodes; the datasets
load with ``LeRobotDataset(root=...)``, equal each other whatever the batch size or worker
count, and replaying a recorded episode's actions from its seed and initial state reproduces
every frame the policy saw, pixels included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import fill_up, read_metrics

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.engine.vector import LazyVectorEnv, reset_slots

pytest.importorskip("lerobot.datasets", reason="LeRobot is not installed")

from lerobot.datasets.lerobot_dataset import LeRobotDataset

MW_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().error is None
"""
MW_RUN = ["--benchmark-env=metaworld", "--benchmark-task=reach-v3,push-v3",
          "--benchmark-episodes=3", "--benchmark-max-steps=40", "-p", "no:cacheprovider"]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def writer_loaded(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Write and read one tiny dataset first: pytester unloads the modules a test session
    imports, and pandas' Arrow extension types cannot register a second time."""
    from pytest_benchmarks.engine.dataset import build_dataset
    from pytest_benchmarks.engine.recording import RecordedEpisode, write_part

    folder = tmp_path_factory.mktemp("warm")
    frames = {"observation.state": np.zeros((1, 2), np.float32),
              "action": np.zeros((1, 2), np.float32)}  # fmt: skip
    task = catalog.get("metaworld").tasks()[0]
    record = EpisodeRecord(0, 0, 0, False, 1, 0.0, 0.0, 0.0)
    write_part(folder / "parts", RecordedEpisode(task, "warm", record, frames, 80, None))
    build_dataset(folder / "parts", folder / "data")
    frames_of(folder / "data")


def frames_of(root: Path) -> dict[str, Any]:
    """Everything a dataset holds, as plain values: frames, episodes, tasks, info, stats."""
    dataset = LeRobotDataset("local/test", root=root)
    columns = dataset.hf_dataset.with_format("numpy")[:]
    episodes = dataset.meta.episodes.to_pandas().drop(
        columns=[c for c in dataset.meta.episodes.column_names if c.startswith("stats/")]
    )
    return {
        "frames": {k: np.asarray(v).tolist() for k, v in columns.items()},
        "episodes": episodes.to_dict("list"),
        "tasks": dataset.meta.tasks.to_dict(),
        "info": json.loads((root / "meta" / "info.json").read_text()),
        "stats": json.loads((root / "meta" / "stats.json").read_text()),
    }


def replay(root: Path, settings: Settings, episode: int) -> None:
    """Step a fresh env with the recorded actions of one dataset episode from its seed and
    initial state; every observation the policy saw must come back exactly."""
    dataset = LeRobotDataset("local/test", root=root)
    row = dataset.meta.episodes[episode]
    task = next(
        t for t in catalog.get(row["benchmark/task_id"].split("/")[0]).tasks()
        if t.id == row["benchmark/task_id"]
    )  # fmt: skip
    config = settings.env_config(task)
    processors = catalog.get(task.env).processors(config)
    frames = dataset.hf_dataset.with_format("numpy")[
        row["dataset_from_index"] : row["dataset_to_index"]
    ]
    env = LazyVectorEnv(catalog.get(task.env), config, 1, sync=True)
    try:
        obs, _ = reset_slots(
            env.get(), {0: (row["benchmark/seed"], row["benchmark/init_state"], 0)}
        )
        for step, action in enumerate(frames["action"]):
            batch = processors(obs)
            for name in processors.features:
                np.testing.assert_array_equal(
                    batch[name][0], frames[name][step], err_msg=f"{name} at frame {step}"
                )
            obs, reward, terminated, truncated, _ = env.get().step(action[None])
            assert float(reward[0]) == pytest.approx(float(frames["next.reward"][step]), abs=1e-5)
            assert bool(terminated[0] or truncated[0]) == bool(frames["next.done"][step])
        assert bool(frames["next.done"][-1])
    finally:
        env.close()


def test_metaworld_dataset_is_the_same_with_and_without_xdist(pytester: pytest.Pytester):
    pytester.makepyfile(test_mw=MW_TESTS)
    one = pytester.path / "one"
    two = pytester.path / "two"
    result = pytester.runpytest(*MW_RUN, "--benchmark-batch-size=1", f"--benchmark-record={one}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"record: LeRobotDataset at {one}: 6 episodes of 2 tasks, *"])
    result = pytester.runpytest(
        *MW_RUN, "--benchmark-batch-size=2", f"--benchmark-record={two}", "-n", "2"
    )
    result.assert_outcomes(passed=2)
    assert frames_of(one) == frames_of(two)
    assert not (pytester.path / "one.parts").exists()
    # The data files themselves are byte for byte the same.
    data = sorted((one / "data").rglob("*.parquet"))
    assert data and all(p.read_bytes() == (two / p.relative_to(one)).read_bytes() for p in data)

    dataset = LeRobotDataset("local/one", root=one)
    metrics = read_metrics(pytester.path / "benchmark-results" / "metrics.json")
    assert dataset.fps == 80 and dataset.meta.robot_type == "sawyer"
    assert set(dataset.features) >= {"observation.state", "action", "next.reward", "next.done",
                                     "next.success"}  # fmt: skip
    assert dataset.features["observation.state"]["shape"] == (39,)
    rows = dataset.meta.episodes
    # Dataset order: by task, then episode index; each row says where it came from.
    assert rows["benchmark/task_id"] == ["metaworld/push-v3"] * 3 + ["metaworld/reach-v3"] * 3
    assert rows["benchmark/episode"] == [0, 1, 2, 0, 1, 2]
    assert rows["benchmark/seed"] == [1000, 1001, 1002] * 2
    by_task = {r["id"]: r for r in metrics["results"]}
    for i, (task_id, index) in enumerate(
        zip(rows["benchmark/task_id"], rows["benchmark/episode"], strict=True)
    ):
        episode = by_task[task_id]["episodes"][index]
        assert rows["length"][i] == episode["steps"]
        assert rows["benchmark/success"][i] == episode["success"]
        assert rows["benchmark/init_state"][i] == episode["init_state"]
    assert dataset.meta.tasks.index.tolist() == [
        by_task["metaworld/push-v3"]["description"], by_task["metaworld/reach-v3"]["description"]
    ]  # fmt: skip
    replay(one, settings(obs="state", max_steps=40), 4)


def settings(**changes: Any) -> Settings:
    return replace(Settings(None, None, 3, 1, True, 1000, "scripted", None, Path("m")), **changes)


def test_pixel_frames_are_what_the_policy_saw(tmp_path: Path):
    out = tmp_path / "pixels"
    run = evaluate("metaworld", tasks=["reach-v3"], episodes=2, batch_size=2, max_steps=25,
                   obs="pixels", image_size=32, record=out)  # fmt: skip
    assert run.dataset is not None and run.dataset.episodes == 2 and run.dataset.frames == 50
    dataset = LeRobotDataset("local/pixels", root=out)
    assert dataset.features["observation.images.corner2"]["dtype"] == "image"
    assert dataset.features["observation.images.corner2"]["shape"] == (32, 32, 3)
    for episode in range(2):
        replay(out, settings(obs="pixels", image_size=(32, 32), max_steps=25), episode)
    # Training reads LeRobot's torch frames: CHW floats in [0, 1] of the same pixels.
    stored = dataset.hf_dataset.with_format("numpy")[30]["observation.images.corner2"]
    trained = dataset[30]["observation.images.corner2"].numpy()
    np.testing.assert_array_equal((trained.transpose(1, 2, 0) * 255).round(), stored)


def test_record_only_successes_keeps_the_demonstrations(tmp_path: Path):
    out = tmp_path / "demos"
    # At 45 steps the expert has not reached every goal yet.
    run = evaluate("metaworld", tasks=["reach-v3"], episodes=6, batch_size=3, max_steps=45,
                   record=out, record_only="success")  # fmt: skip
    succeeded = [e.index for r in run.results for e in r.episodes if e.success]
    assert 0 < len(succeeded) < 6, "the settings must give both outcomes"
    rows = LeRobotDataset("local/demos", root=out).meta.episodes
    assert rows["benchmark/episode"] == succeeded
    assert all(rows["benchmark/success"])


def test_record_only_successes_with_none_passes_and_says_so(pytester: pytest.Pytester):
    """A run that keeps only successes, none of which succeeded, has nothing to record: the
    session passes, says so, and leaves no dataset directory; the API returns no dataset."""
    pytester.makepyfile(test_mw=MW_TESTS)
    out = pytester.path / "demos"
    # Two steps: the expert reaches no goal.
    result = pytester.runpytest(*MW_RUN, "--benchmark-task=reach-v3", "--benchmark-episodes=2",
                                "--benchmark-max-steps=2", f"--benchmark-record={out}",
                                "--benchmark-record-only=success")  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"record: recorded 0 episodes: none succeeded (2 ran; --benchmark-record-only=success); "
         f"no dataset at {out}"]
    )  # fmt: skip
    assert not out.exists() and not (pytester.path / "demos.parts").exists()
    assert read_metrics(pytester.path / "benchmark-results/metrics.json")["run"]["partial"] is False
    run = evaluate("metaworld", tasks=["reach-v3"], episodes=2, max_steps=2,
                   record=pytester.path / "api", record_only="success")  # fmt: skip
    assert run.dataset is None and not (pytester.path / "api").exists()


def test_libero_records_lerobots_layout(tmp_path: Path):
    pytest.importorskip("libero")
    out = tmp_path / "libero"
    run = evaluate("libero", tasks=["libero_spatial/0"], episodes=1, max_steps=4, obs="lerobot",
                   image_size=32, record=out)  # fmt: skip
    assert [r.error for r in run.results] == [None]
    dataset = LeRobotDataset("local/libero", root=out)
    assert dataset.fps == 30 and dataset.meta.robot_type == "panda"
    shapes = {k: tuple(f["shape"]) for k, f in dataset.features.items()}
    assert shapes["observation.images.image"] == shapes["observation.images.image2"] == (32, 32, 3)
    assert shapes["observation.state"] == (8,) and shapes["action"] == (7,)
    replay(out, settings(obs="lerobot", image_size=(32, 32), max_steps=4), 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--benchmark-record-only=success"], "--benchmark-record-only: needs --benchmark-record DIR"),
        (["--benchmark-record=out", "--benchmark-record-only=good"],
         "--benchmark-record-only: 'good' is not one of all, success"),
        (["--benchmark-record=exists"], "--benchmark-record: */exists already exists; *"),
        (["--benchmark-record=dangling"],
         "--benchmark-record: */dangling is a dangling symbolic link (to */gone); give a new *"),
        # Only an attempt sees that a directory takes no new files (root writes almost anywhere).
        (["--benchmark-record=/proc/data"],
         "--benchmark-record: cannot write /proc/data: directory /proc is not writable *"),
        (["--benchmark-record=out", "--benchmark-env=metaworld,libero",
          "--benchmark-task=reach-v3,libero_spatial/0"],
         "--benchmark-record: one dataset holds one benchmark; metaworld, libero are selected*"),
    ],
)  # fmt: skip
def test_bad_record_options_are_one_line(pytester: pytest.Pytester, args: list[str], message: str):
    pytester.makepyfile(test_mw=MW_TESTS)
    (pytester.path / "exists").mkdir()
    (pytester.path / "dangling").symlink_to(pytester.path / "gone")
    result = pytester.runpytest("--benchmark-env=metaworld", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_a_failed_build_keeps_the_episodes_for_record_build(pytester: pytest.Pytester):
    out = pytester.path / "data"
    # Something takes the dataset's directory while the episodes run: LeRobot cannot create it.
    pytester.makepyfile(test_mw=MW_TESTS, test_zz=f"def test_take_dir():\n    import os\n"
                        f"    os.mkdir({str(out)!r})\n")  # fmt: skip
    result = pytester.runpytest(*MW_RUN, "--benchmark-task=reach-v3", f"--benchmark-record={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"record: no dataset written: RecordError: {out} already exists; move it away to build "
         f"the dataset there; the recorded episodes are kept in {out}.parts"]
    )  # fmt: skip
    assert len(list((pytester.path / "data.parts").rglob("*.npz"))) == 3
    # The metrics JSON says what the exit status says: the run did not leave all it was asked.
    run = read_metrics(pytester.path / "benchmark-results" / "metrics.json")["run"]
    assert (run["exitstatus"], run["partial"]) == (pytest.ExitCode.TESTS_FAILED, True)
    # The next run refuses to mix its episodes with these.
    again = pytester.runpytest(*MW_RUN, f"--benchmark-record={out}")
    again.stderr.fnmatch_lines(["ERROR: --benchmark-record: * already exists; *"])
    out.rmdir()
    # With the directory gone, the parts left beside it are still refused.
    again = pytester.runpytest(*MW_RUN, f"--benchmark-record={out}")
    again.stderr.fnmatch_lines(
        [f"ERROR: --benchmark-record: {out}.parts holds the episodes of an earlier run that was "
         "not built into a dataset; carry that run on with --benchmark-resume, build it with "
         "`pytest-benchmarks record-build` or remove it"]
    )  # fmt: skip
    cli = [sys.executable, "-m", "pytest_benchmarks.cli", "record-build"]
    done = subprocess.run([*cli, str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"LeRobotDataset at {out}: 3 episodes")
    assert LeRobotDataset("local/data", root=out).num_episodes == 3
    assert not (pytester.path / "data.parts").exists()
    missing = subprocess.run([*cli, str(pytester.path / "nope")], capture_output=True, text=True,
                             check=False)  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith("nope.parts: no recorded episodes there")


def test_episode_record_fields_travel_through_part_files(tmp_path: Path):
    from pytest_benchmarks.engine.recording import RecordedEpisode, read_part, write_part

    task = catalog.get("metaworld").tasks()[0]
    record = EpisodeRecord(3, 1003, 3, True, 2, 1.5, 1.0, 0.25)
    frames = {"observation.state": np.ones((2, 39), np.float32),
              "action": np.zeros((2, 4), np.float32)}  # fmt: skip
    path = write_part(tmp_path, RecordedEpisode(task, "reach", record, frames, 80, "sawyer"))
    back = read_part(path)
    assert (back.task, back.record, back.fps, back.robot_type) == (task, record, 80, "sawyer")
    assert all(np.array_equal(back.frames[k], v) for k, v in frames.items())


def test_ctrl_c_keeps_the_finished_episodes_for_resume_or_record_build(
    toy_project: pytest.Pytester,
):
    # Tasks run in the toy benchmark's order: walk and stroll finish, then interrupt gets SIGINT.
    out = toy_project.path / "data"
    result = toy_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-task=walk,stroll,interrupt",
        "--benchmark-episodes=3", "--benchmark-batch-size=1", f"--benchmark-record={out}",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [f"record: interrupted; the finished episodes are kept in {out}.parts: carry the run on "
         f"with --benchmark-resume, or build them now with `pytest-benchmarks record-build {out}`"]
    )  # fmt: skip
    assert not out.exists()
    cli = [sys.executable, "-m", "pytest_benchmarks.cli", "record-build", str(out)]
    subprocess.run(cli, capture_output=True, text=True, check=True)
    rows = LeRobotDataset("local/data", root=out).meta.episodes
    assert sorted(zip(rows["benchmark/task_id"], rows["benchmark/episode"], strict=True)) == [
        (task, index) for task in ("toy/stroll", "toy/walk") for index in range(3)
    ]
    assert not (toy_project.path / "data.parts").exists()


def write_parts(parts: Path, count: int) -> list[Path]:
    from pytest_benchmarks.engine.recording import RecordedEpisode, write_part

    task = catalog.get("metaworld").tasks()[0]
    paths = []
    for index in range(count):
        frames = {"observation.state": np.full((2, 3), index, np.float32),
                  "action": np.zeros((2, 4), np.float32)}  # fmt: skip
        record = EpisodeRecord(index, 1000 + index, index, False, 2, 0.0, 0.0, 0.0)
        paths.append(write_part(parts, RecordedEpisode(task, "reach", record, frames, 80, None)))
    return paths


def record_build(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``pytest-benchmarks record-build ARGS`` in this process (LeRobot, which writes the
    dataset, imported once rather than by every command): exit status, stdout, stderr."""
    from pytest_benchmarks import cli

    capsys.readouterr()
    try:
        code = cli.main(["record-build", *args])
    except SystemExit as exc:  # argparse's error(): status 2 and its message on stderr
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("damage", "index"),
    [("empty", 0), ("truncated", 2), ("random", 1)],  # the first read to order the parts, or later
)
def test_a_damaged_part_is_named_in_one_line_and_leaves_no_half_written_dataset(
    tmp_path: Path, damage: str, index: int, capsys: pytest.CaptureFixture[str]
):
    out = tmp_path / "data"
    paths = write_parts(tmp_path / "data.parts", 3)
    content = paths[index].read_bytes()
    damaged = {"empty": b"", "truncated": content[: len(content) // 2],
               "random": np.random.default_rng(0).bytes(len(content))}[damage]  # fmt: skip
    paths[index].write_bytes(damaged)
    code, _, err = record_build(capsys, str(out))
    assert code == 2, err
    line = err.strip()
    assert "\n" not in line and f"{paths[index]}: not a readable episode part (" in line, line
    assert line.endswith("; remove it to build the others")
    # Nothing at DIR, no temporary sibling left, every part kept: the build can run again.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.parts"]
    assert sorted((tmp_path / "data.parts").rglob("*.npz")) == sorted(paths)
    paths[index].unlink()
    code, out_text, err = record_build(capsys, str(out))
    assert code == 0, err
    assert out_text.startswith(f"LeRobotDataset at {out}: 2 episodes")


def test_record_build_given_the_parts_folder_names_the_command_to_run(tmp_path: Path):
    write_parts(tmp_path / "data.parts", 1)
    cli = [sys.executable, "-m", "pytest_benchmarks.cli", "record-build"]
    done = subprocess.run([*cli, str(tmp_path / "data.parts")], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        f"{tmp_path / 'data.parts'} is the recorded episodes' folder; give the dataset's "
        f"directory: pytest-benchmarks record-build {tmp_path / 'data'}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.parts"]


def test_a_build_on_a_full_disk_leaves_no_dataset_and_keeps_every_part(
    full_disk: Path, capsys: pytest.CaptureFixture[str]
):
    (full_disk / "filler").unlink()
    paths = write_parts(full_disk / "data.parts", 3)
    fill_up(full_disk / "filler")
    code, _, err = record_build(capsys, str(full_disk / "data"))
    assert code != 0, err[-3000:]
    line = err.strip().splitlines()[-1]
    assert line.startswith(
        f"pytest-benchmarks: error: cannot create a LeRobot dataset at {full_disk / 'data'}: "
    )
    assert line.endswith("No space left on device"), line
    assert sorted(p.name for p in full_disk.iterdir()) == ["data.parts", "filler"]
    assert sorted((full_disk / "data.parts").rglob("*.npz")) == sorted(paths)
    (full_disk / "filler").unlink()
    code, out_text, err = record_build(capsys, str(full_disk / "data"))
    assert code == 0, err[-3000:]
    assert out_text.startswith(f"LeRobotDataset at {full_disk / 'data'}: 3 episodes")


def test_an_episode_whose_recording_fails_on_a_full_disk_is_kept(
    toy_project: pytest.Pytester, full_disk: Path
):
    """The episode finished in the simulator: it is in the row and the journal before its part
    file is written, so a write that fails ends the task with the error and loses nothing."""
    metrics = toy_project.path / "run.json"
    result = toy_project.runpytest(
        "-p", "no:cacheprovider", "--benchmark-task=walk", "--benchmark-episodes=3",
        "--benchmark-batch-size=1", f"--benchmark-record={full_disk / 'data'}",
        f"--benchmark-metrics={metrics}",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    row = json.loads(metrics.read_text())["results"][0]
    assert "No space left on device" in row["error"], row["error"]
    assert [e["index"] for e in row["episodes"]] == [0]


def test_a_second_session_on_a_live_recordings_parts_is_told_it_is_in_use(
    toy_project: pytest.Pytester,
):
    """The first session holds with episodes already in DIR.parts: the second is told the
    folder is another live session's, not advised to remove or build what is being written."""
    from held import HOLD, finish, held, start

    data = toy_project.path / "data"
    first = start(toy_project, f"--benchmark-record={data}", "--benchmark-metrics=first.json",
                  hold_at=HOLD)  # fmt: skip
    held(toy_project, first)
    second = toy_project.runpytest(
        "-p", "no:cacheprovider", f"--benchmark-record={data}", "--benchmark-metrics=second.json"
    )
    (toy_project.path / "go").touch()
    finish(first, toy_project)
    assert second.ret == pytest.ExitCode.USAGE_ERROR
    second.stderr.fnmatch_lines([
        f"ERROR: --benchmark-record: {data} is in use by another session (PID {first.pid}), which "
        f"is recording into {data}.parts; give this one another directory, or wait for that one "
        "to end"
    ])  # fmt: skip
    assert first.returncode == 0
