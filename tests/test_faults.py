"""Faults never lose finished results: dead workers, raising envs and policies, hangs, and two
sessions writing one metrics file. The toy benchmark's tasks misbehave on purpose."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from conftest import read_metrics

from pytest_benchmarks.metrics.document import schema
from pytest_benchmarks.metrics.document import write_metrics as write_atomic


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    document = read_metrics(pytester.path / "benchmark-results" / "metrics.json")
    jsonschema.validate(document, schema())
    return {row["id"]: row for row in document["results"]}


def leftover_processes(marker: str, wait_s: float = 10.0) -> list[str]:
    """Processes whose command line mentions ``marker`` (the test's directory), after giving
    the ones on their way out up to ``wait_s`` to go."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().split(") ", 1)[1][0]
            except OSError:
                continue
            if marker in cmdline and state != "Z":
                found.append(f"{entry.name}: {cmdline[:200]}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_killed_vector_worker_is_recorded_with_its_signal(toy_project: pytest.Pytester):
    result = run(
        toy_project,
        "--benchmark-task=walk,killed,stroll",
        "--benchmark-episodes=4",
        "--benchmark-batch-size=2",
    )
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        ["*WorkerDied: toy/killed: vector env worker ? (pid *) killed by SIGKILL*"]
    )
    found = rows(toy_project)
    assert found["toy/walk"]["successes"] == 4 and found["toy/stroll"]["successes"] == 4
    assert found["toy/killed"]["error"].startswith("WorkerDied: vector env worker ")
    assert "killed by SIGKILL" in found["toy/killed"]["error"]
    assert leftover_processes(str(toy_project.path)) == []


def test_a_dead_xdist_worker_fails_only_its_task(toy_project: pytest.Pytester):
    # One env per task runs in the xdist worker itself, so SIGKILL takes the worker down.
    result = run(
        toy_project,
        "-n",
        "2",
        "--benchmark-task=walk,killed,stroll",
        "--benchmark-episodes=2",
        "--benchmark-batch-size=1",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_rollout[[]toy/killed[]]*", "*4 passed*"])
    out = result.stdout.str()
    assert "not run: toy/killed failed earlier in this session: WorkerCrashed" in out
    found = rows(toy_project)
    assert found["toy/walk"]["successes"] == 2 and found["toy/stroll"]["successes"] == 2
    error = found["toy/killed"]["error"]
    assert error.startswith("WorkerCrashed: xdist worker gw"), error
    assert "killed by SIGKILL running test_toy.py::test_" in error
    assert found["toy/killed"]["n_episodes"] == 0 and found["toy/killed"]["planned_episodes"] == 2


@pytest.mark.parametrize("batch", ["1", "2"])
def test_envs_and_policies_that_raise_fail_only_their_task(toy_project: pytest.Pytester, batch):
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + """
import toybench

walk = toybench.Walker.act

def act(self, batch):
    if batch["task"][0].startswith("Walk slowly"):
        raise ZeroDivisionError("the policy divided by zero")
    return walk(self, batch)

toybench.Walker.act = act
"""
    )
    result = run(
        toy_project,
        "--benchmark-task=reset-error,walk,step-error,stroll",
        "--benchmark-episodes=2",
        f"--benchmark-batch-size={batch}",
    )
    result.assert_outcomes(passed=2, failed=6)
    found = rows(toy_project)
    assert found["toy/walk"]["successes"] == 2 and found["toy/walk"]["error"] is None
    assert found["toy/reset-error"]["error"] == "RuntimeError: the corridor has no floor"
    assert found["toy/step-error"]["error"] == "ValueError: the corridor wall moved"
    assert found["toy/stroll"]["error"] == "ZeroDivisionError: the policy divided by zero"
    # One line per task in the summary; the full traceback, down to the raising line, in the
    # failure report.
    result.stdout.fnmatch_lines(
        [
            "toy/reset-error *ERROR RuntimeError: the corridor has no floor",
            "toy/step-error *ERROR ValueError: the corridor wall moved",
            "toy/stroll *ERROR ZeroDivisionError: the policy divided by zero",
        ]
    )
    out = result.stdout.str()
    assert 'raise ZeroDivisionError("the policy divided by zero")' in out
    if batch == "1":  # in this process: the env's own source line is in the traceback
        assert 'raise ValueError("the corridor wall moved")' in out


@pytest.mark.parametrize("batch", ["1", "2"])
def test_timeout_stops_a_hung_task_and_reaps_its_workers(toy_project: pytest.Pytester, batch):
    result = run(
        toy_project,
        "--benchmark-task=walk,hang,stroll",
        "--benchmark-episodes=2",
        f"--benchmark-batch-size={batch}",
        "--benchmark-timeout=3",
    )
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        ["*TaskTimeout: toy/hang timed out after 3 s (--benchmark-timeout)*"]
    )
    found = rows(toy_project)
    assert found["toy/hang"]["error"].startswith("TaskTimeout: toy/hang timed out after 3 s")
    assert found["toy/walk"]["successes"] == 2 and found["toy/stroll"]["successes"] == 2
    assert leftover_processes(str(toy_project.path)) == []


def test_bad_timeout_is_one_line(toy_project: pytest.Pytester):
    result = run(toy_project, "--benchmark-timeout=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --benchmark-timeout: 'soon' is not a number of seconds > 0"]
    )


def _writer(path: str, tag: int, count: int) -> None:
    for i in range(count):
        write_atomic(Path(path), {"writer": tag, "i": i, "payload": [tag] * 20000})


def test_concurrent_writers_always_leave_one_valid_document(tmp_path: Path):
    """Two processes replace one file 200 times each while this one reads it: every read is a
    whole document from one writer."""
    path = tmp_path / "metrics.json"
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_writer, args=(str(path), tag, 200)) for tag in (1, 2)]
    for w in writers:
        w.start()
    reads = 0
    while any(w.is_alive() for w in writers) or reads == 0:
        if reads == 0 and not any(w.is_alive() for w in writers) and not path.exists():
            pytest.fail(
                f"the writers ended without writing: exit codes {[w.exitcode for w in writers]}"
            )
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError:
            continue
        assert document["payload"] == [document["writer"]] * 20000
        reads += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert reads > 10
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_two_sessions_on_one_metrics_path(toy_project: pytest.Pytester):
    """Two real sessions share a metrics path; the file is always one valid run."""
    path = toy_project.path / "shared.json"
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--benchmark-metrics={path}"]
    sessions = [
        subprocess.Popen(
            [*args, f"--benchmark-seed={seed}", "--benchmark-episodes=300", "-q"],
            cwd=toy_project.path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for seed in (1, 2)
    ]
    seen = set()
    while any(s.poll() is None for s in sessions):
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError:
            continue
        jsonschema.validate(document, schema())
        run_seed = document["run"]["seed"]
        seeds = {e["seed"] - e["index"] for r in document["results"] for e in r["episodes"]}
        assert seeds <= {run_seed}, f"a document of run {run_seed} holds episodes of {seeds}"
        seen.add(run_seed)
    assert [s.wait() for s in sessions] == [0, 0]
    # Documents were read while the sessions ran, each one run's whole, never a mix of both.
    assert seen and seen <= {1, 2}, seen
    final = read_metrics(path)
    assert final["run"]["seed"] in (1, 2) and not final["run"]["partial"]
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".shared")] == []
