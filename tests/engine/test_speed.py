"""Speed benchmarks through pytest-benchmark: stored, compared, failed when slower; and how the
robot tests behave under pytest-benchmark's --benchmark-only and --benchmark-skip."""

from __future__ import annotations

import json
import re

import pytest
from helpers import XDIST_VARIABLES, read_metrics, run

#: A policy that takes PACE_S seconds per batch (a model made slower on purpose).
PACED = """
import os
import time

import numpy as np

class Paced:
    def __init__(self, num_envs):
        self.num_envs = num_envs
        self.pace = float(os.environ.get("PACE_S", "0.002"))
    def reset(self, slots, seeds):
        pass
    def act(self, batch):
        time.sleep(self.pace)
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "paced:make", "revision": None}

def make(config, num_envs):
    return Paced(num_envs)
"""

SPEED_TESTS = """

def test_policy_latency(benchmark_speed, benchmark):
    benchmark_speed.policy_latency(benchmark)

def test_env_step(benchmark_speed, benchmark):
    benchmark_speed.env_step(benchmark)
"""


@pytest.fixture
def speed_project(toy_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    toy_project.makepyfile(paced=PACED)
    test_file = toy_project.path / "test_toy.py"
    test_file.write_text(test_file.read_text() + SPEED_TESTS)
    return toy_project


def timed(pytester: pytest.Pytester, name: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-task=walk", "--benchmark-policy=module:paced:make",
        "--benchmark-storage=file://store", "--benchmark-max-time=0.05",
        f"--benchmark-json={name}.json", *args,
    )  # fmt: skip


def benchmarks(pytester: pytest.Pytester, name: str) -> dict[str, dict]:
    document = json.loads((pytester.path / f"{name}.json").read_text())
    return {b["name"]: b for b in document["benchmarks"]}


def test_speed_is_stored_compared_and_a_slower_policy_fails(
    speed_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    first = timed(speed_project, "first", "--benchmark-only", "--benchmark-autosave")
    # --benchmark-only: the robot tests are pytest-benchmark's "non-benchmark" tests.
    first.assert_outcomes(passed=2, skipped=2)
    first.stdout.fnmatch_lines(["*no task was evaluated (no test called evaluate())*not written"])
    assert not (speed_project.path / "benchmark-results").exists()
    stored = benchmarks(speed_project, "first")
    latency = stored["test_policy_latency[toy/walk]"]
    assert latency["group"] == "policy latency: toy"
    assert latency["extra_info"]["task"] == "toy/walk"
    assert latency["stats"]["median"] >= 0.002  # the policy sleeps that long
    assert latency["extra_info"]["batches_per_s"] == pytest.approx(
        1 / latency["stats"]["median"], rel=1e-3
    )
    step = stored["test_env_step[toy/walk]"]
    assert step["group"] == "env step: toy" and step["extra_info"]["obs"] == "state"
    assert step["stats"]["rounds"] >= 5 and step["extra_info"]["steps_per_s"] > 0
    assert len(list((speed_project.path / "store").rglob("*.json"))) == 1

    gate = ["--benchmark-only", "--benchmark-compare", "--benchmark-compare-fail=median:200%"]
    same = timed(speed_project, "same", *gate, "-k", "latency")
    same.assert_outcomes(passed=1, deselected=3)
    assert same.ret == pytest.ExitCode.OK

    monkeypatch.setenv("PACE_S", "0.02")  # ten times slower
    slower = timed(speed_project, "slower", *gate, "-k", "latency")
    assert slower.ret == pytest.ExitCode.TESTS_FAILED, slower.ret
    slower.stderr.fnmatch_lines(
        ["Performance has regressed:", "*test_policy_latency[[]toy/walk[]]*'median' has failed*"]
    )


def test_benchmark_skip_runs_the_robot_tests_and_xdist_runs_every_speed_test_once(
    speed_project: pytest.Pytester,
):
    skipped = timed(speed_project, "skip", "--benchmark-skip")
    skipped.assert_outcomes(passed=2, skipped=2)
    assert read_metrics(speed_project.path / "benchmark-results" / "metrics.json")["results"]
    assert not (speed_project.path / "skip.json").exists()

    # Under xdist pytest-benchmark times nothing: each speed test runs its code once, and the
    # session says so once, at its start, in the plugin's words (not pytest-benchmark's
    # warning from each worker).
    both = timed(speed_project, "xdist", "-n", "2")
    both.assert_outcomes(passed=4)
    line = "speed tests (test_policy_latency, test_env_step) run once, untimed, under xdist; "
    assert both.stdout.str().count(line) == 1
    assert "PytestBenchmarkWarning" not in both.stdout.str() + both.stderr.str()
    document = read_metrics(speed_project.path / "benchmark-results" / "metrics.json")
    assert [row["id"] for row in document["results"]] == ["toy/walk"]


def test_pytest_benchmarks_files_are_checked_before_any_test_runs(speed_project: pytest.Pytester):
    """pytest-benchmark would write --benchmark-json, and find nothing to compare against,
    only after every test ran (a traceback, a usage error): both are one line at the start,
    and no test runs."""
    args = ["-p", "no:cacheprovider", "-p", "no:xdist", "--benchmark-only",
            "--benchmark-task=walk", "--benchmark-policy=module:paced:make"]  # fmt: skip
    folder = speed_project.path / "missing"
    done = speed_project.runpytest(*args, f"--benchmark-json={folder}/out.json")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines([f"ERROR: --benchmark-json: {folder}/out.json: the folder {folder} "
                               "does not exist; create it or give a path in an existing folder"])  # fmt: skip
    assert "passed" not in done.stdout.str()
    store = speed_project.path / "store" / "machine"
    store.mkdir(parents=True)
    (store / "0001_cut.json").write_text('{"machine_info": {')  # a run cut short while saved
    gate = [*args, "--benchmark-storage=file://store", "--benchmark-compare",
            "--benchmark-compare-fail=median:200%"]  # fmt: skip
    done = speed_project.runpytest(*gate, "--benchmark-compare=machine/0001")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines([f"ERROR: --benchmark-compare-fail: the saved run {store}/0001_cut.json "
                               "cannot be read (Expecting property name*); remove it or compare "
                               "against another (--benchmark-compare=ID)"])  # fmt: skip
    (store / "0001_cut.json").unlink()
    done = speed_project.runpytest(*args, "--benchmark-compare-fail=median:200%")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines(["ERROR: --benchmark-compare-fail: needs --benchmark-compare (the "
                               "latest saved run) or --benchmark-compare=NUM (run NUM) to "
                               "compare against"])  # fmt: skip
    done = speed_project.runpytest(*gate)
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines(["ERROR: --benchmark-compare-fail: there is no saved run in *store "
                               "to compare against; save one first (--benchmark-autosave)"])  # fmt: skip


def test_a_session_that_fails_before_any_task_leaves_no_earlier_metrics(
    toy_project: pytest.Pytester,
):
    metrics = toy_project.path / "benchmark-results" / "metrics.json"
    run(toy_project).assert_outcomes(passed=4)
    assert read_metrics(metrics)["results"]
    # A conftest fixture that fails every test before evaluate() runs.
    toy_project.makeconftest(
        (toy_project.path / "conftest.py").read_text()
        + "\nimport pytest\n\n@pytest.fixture(autouse=True)\ndef broken():\n"
        + "    raise RuntimeError('no simulator today')\n"
    )
    failed = run(toy_project, "--benchmark-seed=7")
    failed.assert_outcomes(errors=4)
    failed.stdout.fnmatch_lines(
        [f"metrics: the session failed before any task finished; {metrics} holds this run's*"]
    )
    document = read_metrics(metrics)
    assert document["results"] == [] and document["run"]["seed"] == 7
    assert document["run"]["partial"] is True and document["run"]["exitstatus"] == 1


def test_no_benchmark_test_collected_leaves_the_metrics_alone(toy_project: pytest.Pytester):
    metrics = toy_project.path / "benchmark-results" / "metrics.json"
    run(toy_project).assert_outcomes(passed=4)
    before = metrics.read_bytes()
    toy_project.makepyfile(test_plain="def test_unrelated():\n    assert False\n")
    plain = run(toy_project, "test_plain.py")
    plain.assert_outcomes(failed=1)
    assert metrics.read_bytes() == before
    assert "metrics:" not in plain.stdout.str()


def test_both_plugins_options_are_in_help_and_disjoint(pytester: pytest.Pytester):
    text = run(pytester, "--help").stdout.str()
    sections = re.split(r"\n(?=\S[^\n]*:\n)", text)

    def flags(title: str) -> set[str]:
        (section,) = [s for s in sections if s.startswith(title)]
        return set(re.findall(r"^\s+(--benchmark-[a-z-]+)", section, re.M))

    ours = flags("robot-policy simulation benchmarks (pytest-benchmarks):")
    theirs = flags("benchmark:")
    assert {"--benchmark-env", "--benchmark-policy", "--benchmark-timeout"} <= ours
    assert {"--benchmark-only", "--benchmark-skip", "--benchmark-compare-fail"} <= theirs
    assert not ours & theirs
