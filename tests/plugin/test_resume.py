"""``--benchmark-resume`` (and ``resume=`` in the API) carries an interrupted run on: finished
tasks are kept and not run, an interrupted task runs only its missing episodes, and the result
equals an uninterrupted run's, episode for episode; a file of other settings is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import TESTS, outcomes, read_metrics, run, run_in_subprocess

#: The toy's walker, noting each episode it starts (task and seed) in ``episodes.txt``; it
#: raises KeyboardInterrupt (as Ctrl-C would) at stroll's fourth episode unless the file
#: ``calm`` exists, which it then writes: one interruption.
FLAKY = """
import os
from pathlib import Path
import numpy as np

class Walker:
    def __init__(self, task, num_envs):
        self.task, self.num_envs = task, num_envs
    def reset(self, slots, seeds):
        with open("episodes.txt", "a") as f:
            f.write("".join(f"{self.task} {s}\\n" for s in seeds))
        if self.task == "stroll" and 1003 in seeds and not Path("calm").exists():
            Path("calm").touch()  # once
            raise KeyboardInterrupt
    def act(self, batch):
        return np.ones((len(batch["observation.state"]), 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "flaky", "revision": None}

def make(config, num_envs):
    return Walker(config.task.name, num_envs)
"""
RUN = ["--benchmark-task=walk,stroll", "--benchmark-episodes=6",
       "--benchmark-batch-size=1", "--benchmark-policy=module:flaky:make"]  # fmt: skip


def glob_literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself ([ opens a character class)."""
    return text.replace("[", "[[]")


def started(project: pytest.Pytester) -> list[str]:
    """The episodes started since the last call, as ``task seed`` lines."""
    log = project.path / "episodes.txt"
    lines = log.read_text().split("\n")[:-1] if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_resumed_run_equals_an_uninterrupted_one_and_runs_only_what_is_missing(
    toy_project: pytest.Pytester, workers: str
):
    toy_project.makepyfile(flaky=FLAKY)
    (toy_project.path / "calm").touch()
    whole = run(toy_project, *RUN, "-n", workers, "--benchmark-metrics=whole.json")
    whole.assert_outcomes(passed=4)
    started(toy_project)
    (toy_project.path / "calm").unlink()

    cut = run(toy_project, *RUN, "-n", workers, "--benchmark-metrics=run.json")
    assert cut.ret == pytest.ExitCode.INTERRUPTED
    first = read_metrics(toy_project.path / "run.json")
    assert first["run"]["partial"] is True
    rows = {row["id"]: row for row in first["results"]}
    assert (
        rows["toy/stroll"]["n_episodes"] == 3 and rows["toy/stroll"]["error"] == "KeyboardInterrupt"
    )
    before = started(toy_project)

    resumed = run(
        toy_project, *RUN, "-n", workers, "--benchmark-metrics=run.json", "--benchmark-resume"
    )
    resumed.assert_outcomes(passed=4)
    resumed.stdout.fnmatch_lines(["resume: * finished tasks kept from *run.json; * episodes"])
    document = read_metrics(toy_project.path / "run.json")
    assert outcomes(document) == outcomes(read_metrics(toy_project.path / "whole.json"))
    assert document["run"]["partial"] is False and document["run"]["exitstatus"] == 0
    # Only the episodes the interrupted run lacked ran again.
    walk_done = rows.get("toy/walk", {}).get("n_episodes") == 6
    expected = [f"stroll {1000 + i}" for i in range(3, 6)]
    if not walk_done:  # under xdist the interrupt may stop walk's worker too
        done = {e["index"] for e in rows.get("toy/walk", {"episodes": []})["episodes"]}
        expected += [f"walk {1000 + i}" for i in range(6) if i not in done]
    assert sorted(started(toy_project)) == sorted(expected), before


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_resumed_run_stopped_before_an_unfinished_task_keeps_its_episodes(
    toy_project: pytest.Pytester, workers: str
):
    toy_project.makepyfile(flaky=FLAKY)
    cut = run(toy_project, *RUN, "--benchmark-metrics=run.json")
    assert cut.ret == pytest.ExitCode.INTERRUPTED
    # Ctrl-C as the resumed run reaches stroll, before any of its episodes runs again.
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text() + "\ndef pytest_runtest_setup(item):\n"
        "    if 'toy/stroll' in item.nodeid:\n        raise KeyboardInterrupt\n"
    )
    again = run(
        toy_project, *RUN, "-n", workers, "--benchmark-metrics=run.json", "--benchmark-resume"
    )
    assert again.ret == pytest.ExitCode.INTERRUPTED
    document = read_metrics(toy_project.path / "run.json")
    stroll = {row["id"]: row for row in document["results"]}["toy/stroll"]
    assert stroll["n_episodes"] == 3 and document["run"]["partial"] is True
    assert [e["index"] for e in stroll["episodes"]] == [0, 1, 2]


def test_a_file_of_other_settings_is_refused_in_one_line(toy_project: pytest.Pytester):
    toy_project.makepyfile(flaky=FLAKY)
    (toy_project.path / "calm").touch()
    toy_project.syspathinsert()  # the sessions run in this process: seven of them, one start-up
    run(toy_project, *RUN, "--benchmark-metrics=run.json").assert_outcomes(passed=4)
    for option, message in [
        ("--benchmark-seed=7", "seed 1000, this run has 7"),
        ("--benchmark-episodes=8", "episodes 6, this run has 8"),
        ("--benchmark-task=walk", "tasks walk,stroll, this run has walk"),
        ("--benchmark-policy=scripted", "policy module:flaky:make, this run has scripted"),
    ]:
        result = run(
            toy_project, *RUN, "--benchmark-metrics=run.json", "--benchmark-resume", option
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [f"ERROR: --benchmark-resume: *run.json was made with {glob_literal(message)}; resume with the "
             "same settings, or run without --benchmark-resume"]
        )  # fmt: skip
    (toy_project.path / "bad.json").write_text("{")
    broken = run(toy_project, *RUN, "--benchmark-metrics=bad.json", "--benchmark-resume")
    broken.stderr.fnmatch_lines(["ERROR: --benchmark-resume: *bad.json: not valid JSON *"])
    # A file written before --benchmark-batched-inference existed ran without it.
    path = toy_project.path / "run.json"
    document = json.loads(path.read_text())
    del document["run"]["batched_inference"]
    path.write_text(json.dumps(document))
    older = run(toy_project, *RUN, "--benchmark-metrics=run.json", "--benchmark-resume")
    older.assert_outcomes(passed=4)
    older.stdout.fnmatch_lines(["resume: 2 finished tasks kept from *run.json*"])


def test_kept_episodes_that_do_not_fit_the_plan_are_refused_before_any_runs(
    toy_project: pytest.Pytester,
):
    """An edited file (a duplicated episode, a flipped outcome, a seed the plan does not give)
    is refused in one line naming the task and episode, before any episode runs."""
    toy_project.makepyfile(flaky=FLAKY)
    cut = run(toy_project, *RUN, "--benchmark-metrics=run.json")
    assert cut.ret == pytest.ExitCode.INTERRUPTED
    toy_project.syspathinsert()  # the refused sessions run in this process
    shutil.rmtree(toy_project.path / "run.json.journal")  # the file's word alone
    path = toy_project.path / "run.json"
    clean = json.loads(path.read_text())
    started(toy_project)

    def refused(edit: Callable[[dict], None], message: str) -> None:
        document = json.loads(json.dumps(clean))
        edit({row["id"]: row for row in document["results"]}["toy/stroll"])
        path.write_text(json.dumps(document))
        result = run(toy_project, *RUN, "--benchmark-metrics=run.json", "--benchmark-resume")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert [line for line in result.stderr.lines if line] == [
            f"ERROR: --benchmark-resume: {path}: toy/stroll {message}"
        ]
        assert started(toy_project) == []

    def duplicate(row: dict) -> None:
        row["episodes"].append(row["episodes"][0])
        row["n_episodes"] += 1
        row["successes"] += 1

    def flip(row: dict) -> None:
        row["episodes"][1]["success"] = False
        row["successes"] -= 1

    def flip_alone(row: dict) -> None:
        row["episodes"][1]["success"] = False

    def reseed(row: dict) -> None:  # a file from before the checksums
        for episode in row["episodes"]:
            del episode["sum"]
        row["episodes"][1]["seed"] = 2001

    refused(duplicate, "holds episode 0 twice")
    refused(flip, "episode 1 does not match its checksum (edited or damaged)")
    refused(flip_alone, "says 3/3 but its episodes give 2/3 (edited?)")
    refused(reseed, "episode 1 ran seed 2001, initial state 1; the plan gives seed 1001, "
                    "initial state 1 (edited, or made by another plan)")  # fmt: skip


def test_another_policy_identity_is_refused_and_the_kept_episodes_stay(
    toy_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """Same spec, another checkpoint revision: the interrupted task's row keeps its episodes
    with the refusal, and no episode runs with the other policy."""
    toy_project.makepyfile(
        flaky=FLAKY.replace('"revision": None', '"revision": os.environ.get("REV")')
    )
    monkeypatch.setenv("REV", "r1")
    cut = run(toy_project, *RUN, "--benchmark-metrics=run.json")
    assert cut.ret == pytest.ExitCode.INTERRUPTED
    started(toy_project)
    monkeypatch.setenv("REV", "r2")
    again = run(toy_project, *RUN, "--benchmark-metrics=run.json", "--benchmark-resume")
    again.assert_outcomes(passed=2, failed=2)  # walk kept; stroll refused
    assert started(toy_project) == []
    stroll = {r["id"]: r for r in read_metrics(toy_project.path / "run.json")["results"]}[
        "toy/stroll"
    ]
    assert [e["index"] for e in stroll["episodes"]] == [0, 1, 2]
    assert stroll["error"].startswith("ResumeError: the kept episodes were run by policy ")
    assert "'revision': 'r1'" in stroll["error"] and "'revision': 'r2'" in stroll["error"]


def test_resume_without_a_file_runs_everything(toy_project: pytest.Pytester):
    toy_project.makepyfile(flaky=FLAKY)
    (toy_project.path / "calm").touch()
    result = run(toy_project, *RUN, "--benchmark-metrics=new.json", "--benchmark-resume")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["resume: no earlier results at *new.json; every task runs"])


API_RESUME = """
import sys
sys.path[:0] = [{tests!r}, "."]
import toybench  # registers the toy benchmark in this process
from pathlib import Path
import pytest
from helpers import outcomes, read_metrics
from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core.validation import OptionError

run = {{"tasks": ["walk", "stroll"], "episodes": 6, "policy": "module:flaky:make"}}
Path("calm").touch()
whole = evaluate("toy", **run, metrics="whole.json")
Path("calm").unlink()
try:
    evaluate("toy", **run, metrics="run.json")
    raise SystemExit("not interrupted")
except KeyboardInterrupt:
    pass
cut = {{row["id"]: row for row in read_metrics(Path("run.json"))["results"]}}
assert cut["toy/stroll"]["n_episodes"] == 3, cut
Path("episodes.txt").unlink()
resumed = evaluate("toy", **run, metrics="run.json", resume=True)
assert outcomes(resumed.metrics) == outcomes(whole.metrics)
assert resumed.metrics["run"]["partial"] is False
assert Path("episodes.txt").read_text().split()[1::2] == ["1003", "1004", "1005"]
try:
    evaluate("toy", **run, resume=True)
    raise SystemExit("resume without metrics was accepted")
except OptionError as exc:
    assert str(exc).startswith("--benchmark-resume: needs metrics=PATH"), exc
print("resumed")
"""


def test_the_api_resumes_too(tmp_path: Path):
    (tmp_path / "flaky.py").write_text(FLAKY)
    script = API_RESUME.format(tests=str(TESTS))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "resumed", done.stderr[-3000:]


def test_a_resumed_recording_run_writes_the_uninterrupted_runs_dataset(
    toy_project: pytest.Pytester,
):
    pytest.importorskip("lerobot.datasets", reason="LeRobot is not installed")
    toy_project.makepyfile(flaky=FLAKY)
    (toy_project.path / "calm").touch()
    whole = run_in_subprocess(
        toy_project, *RUN, "--benchmark-metrics=whole.json", "--benchmark-record=whole"
    )
    whole.assert_outcomes(passed=4)
    (toy_project.path / "calm").unlink()
    record = ["--benchmark-metrics=run.json", "--benchmark-record=data"]
    cut = run_in_subprocess(toy_project, *RUN, *record)
    assert cut.ret == pytest.ExitCode.INTERRUPTED and not (toy_project.path / "data").exists()
    parts = toy_project.path / "data.parts"
    assert len(list(parts.rglob("*.npz"))) == 9
    # Without the recording's parts, or without recording, it is not carried on.
    shutil.copytree(parts, toy_project.path / "kept.parts")
    shutil.rmtree(parts / "toy__stroll")
    lost = run_in_subprocess(toy_project, *RUN, *record, "--benchmark-resume")
    assert lost.ret == pytest.ExitCode.USAGE_ERROR
    lost.stderr.fnmatch_lines(["ERROR: --benchmark-resume: the recording of toy/stroll's kept "
                               f"episodes 0, 1, 2 is missing from {parts}; *"])  # fmt: skip
    unrecorded = run_in_subprocess(toy_project, *RUN, record[0], "--benchmark-resume")
    unrecorded.stderr.fnmatch_lines(["ERROR: --benchmark-resume: *run.json was made with record*"])
    shutil.rmtree(parts)
    shutil.copytree(toy_project.path / "kept.parts", parts)
    assert started(toy_project)
    resumed = run_in_subprocess(toy_project, *RUN, *record, "--benchmark-resume")
    resumed.assert_outcomes(passed=4)
    resumed.stdout.fnmatch_lines(["record: LeRobotDataset at *data: 12 episodes of 2 tasks, *"])
    check = (
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
        "import numpy as np, sys\n"
        "a, b = (LeRobotDataset('local/' + n, root=n) for n in ('whole', 'data'))\n"
        "fa, fb = (d.hf_dataset.with_format('numpy')[:] for d in (a, b))\n"
        "keys = ['observation.state', 'action', 'next.reward', 'episode_index', 'frame_index']\n"
        "assert all(np.array_equal(fa[k], fb[k]) for k in keys)\n"
        "assert list(a.meta.episodes['benchmark/seed']) == list(b.meta.episodes['benchmark/seed'])\n"
        "print('equal')\n"
    )
    done = subprocess.run([sys.executable, "-c", check], cwd=toy_project.path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.stdout.strip() == "equal", done.stderr[-2000:]
