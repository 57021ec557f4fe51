"""Faults never lose finished results: dead workers, raising envs and policies, hangs, and two
sessions writing one metrics file. The toy benchmark's tasks misbehave on purpose."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest
from helpers import HANG_TIMEOUT, leftover_processes, read_metrics, run, run_in_subprocess

from pytest_benchmarks.metrics.document import schema
from pytest_benchmarks.metrics.document import write_metrics as write_atomic


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    document = read_metrics(pytester.path / "benchmark-results" / "metrics.json")
    jsonschema.validate(document, schema())
    return {row["id"]: row for row in document["results"]}


def test_a_killed_vector_worker_is_recorded_with_its_signal(toy_project: pytest.Pytester):
    result = run_in_subprocess(
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


def test_a_vector_worker_killed_as_it_starts_is_named(toy_project: pytest.Pytester):
    result = run_in_subprocess(
        toy_project, "--benchmark-task=walk,killed-at-start", "--benchmark-episodes=2",
        "--benchmark-batch-size=2",
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=2)
    error = rows(toy_project)["toy/killed-at-start"]["error"]
    assert fnmatch.fnmatch(
        error, "WorkerStartError: vector env worker ? (pid *) killed by SIGKILL*while starting"
    ), error
    result.stdout.fnmatch_lines(
        ["toy/killed-at-start *ERROR WorkerStartError: vector env worker *"]
    )
    assert rows(toy_project)["toy/walk"]["successes"] == 2
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


@pytest.mark.parametrize("workers", [[], ["-n", "1"]])
def test_a_policy_that_closes_the_standard_streams_leaves_the_session_its_report(
    toy_project: pytest.Pytester, workers: list[str]
):
    """pytest captures into the file behind sys.stdout: a policy that closes it (and stderr)
    would end the session in pytest's own traceback, its summary and metrics lines lost. The
    streams stay open, also after progress lines (pytest's capture resumes with its own
    streams after each), the task's result stands, and the close is said."""
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + """
import sys
import toybench

reset = toybench.Walker.reset
started = []

def closing(self, slots, seeds):
    started.extend(slots)
    if len(started) == 3:  # after the progress lines of the first two episodes
        sys.stdout.close()
        sys.stderr.close()
    return reset(self, slots, seeds)

toybench.Walker.reset = closing
"""
    )
    result = run_in_subprocess(toy_project, "--benchmark-task=walk", "--benchmark-episodes=4",
                               "--benchmark-progress=0", "--benchmark-batch-size=1",
                               *workers)  # fmt: skip
    result.assert_outcomes(passed=2)
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "*toy/walk: the policy closed sys.stdout and sys.stderr; kept open so that the session "
            "can report",
            "metrics: *metrics.json",
        ]
    )
    assert rows(toy_project)["toy/walk"]["successes"] == 4


def test_a_policy_that_calls_os_exit_ends_only_its_task(toy_project: pytest.Pytester):
    """os._exit skips every finally: at -n 0 the session would end with the policy's status,
    no line and no metrics. It fails the task that called it, and the run goes on; a thread
    the policy started still ends the process as it asks (not tested: it would end this one)."""
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + """
import os
import toybench

act = toybench.Walker.act

def leaving(self, batch):
    if batch["task"][0].startswith("Walk slowly"):
        os._exit(3)
    return act(self, batch)

toybench.Walker.act = leaving
"""
    )
    result = run_in_subprocess(toy_project, "--benchmark-task=stroll,walk", "--benchmark-episodes=2",
                               "--benchmark-batch-size=1")  # fmt: skip
    result.assert_outcomes(passed=2, failed=2)
    found = rows(toy_project)
    assert found["toy/stroll"]["error"] == (
        "PolicyExit: the policy called os._exit(3); its task ends, the run goes on"
    )
    assert found["toy/walk"]["successes"] == 2 and found["toy/walk"]["error"] is None


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
    result = run_in_subprocess(
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
    result = run_in_subprocess(
        toy_project,
        "--benchmark-task=walk,hang,stroll",
        "--benchmark-episodes=2",
        f"--benchmark-batch-size={batch}",
        f"--benchmark-timeout={HANG_TIMEOUT}",
    )
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [f"*TaskTimeout: toy/hang timed out after {HANG_TIMEOUT} s (--benchmark-timeout)*"]
    )
    found = rows(toy_project)
    assert found["toy/hang"]["error"].startswith(
        f"TaskTimeout: toy/hang timed out after {HANG_TIMEOUT} s"
    )
    assert found["toy/walk"]["successes"] == 2 and found["toy/stroll"]["successes"] == 2
    assert leftover_processes(str(toy_project.path)) == []


def test_timeout_kills_workers_that_ignore_sigterm_or_are_stopped(toy_project: pytest.Pytester):
    # A worker that ignores SIGTERM, and one stopped by SIGSTOP: the shutdown escalates to
    # SIGKILL within its deadline instead of waiting on them.
    result = toy_project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--benchmark-task=walk,stubborn,frozen",
        "--benchmark-episodes=2",
        "--benchmark-batch-size=2",
        f"--benchmark-timeout={HANG_TIMEOUT}",
        timeout=240,  # the hung steps would take an hour
    )
    result.assert_outcomes(passed=2, failed=4)
    found = rows(toy_project)
    for task in ("stubborn", "frozen"):
        error = found[f"toy/{task}"]["error"]
        assert error.startswith(f"TaskTimeout: toy/{task} timed out after {HANG_TIMEOUT} s"), error
    assert found["toy/walk"]["successes"] == 2
    assert leftover_processes(str(toy_project.path)) == []


@pytest.mark.parametrize(
    ("factory", "episodes"),
    [("deaf_to_alarms", 2), ("rearming", 400), ("deaf_to_both", 2)],
    ids=["deaf", "rearming", "deaf-to-both"],
)
def test_a_policy_that_ignores_or_rearms_the_alarm_still_times_out(
    toy_project: pytest.Pytester, factory: str, episodes: int
):
    """SIGALRM ignored (and the build asleep), or the timer pushed on at every step: the
    backstop (SIGUSR2, a grace after the limit) ends the task as TaskTimeout all the same; with
    SIGUSR2 taken too, the exception raised in the main thread a grace later does."""
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    result = toy_project.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--benchmark-policy=module:hostile:{factory}",
        "--benchmark-task=walk", f"--benchmark-episodes={episodes}", "--benchmark-batch-size=1",
        "--benchmark-timeout=1", timeout=240,
    )  # fmt: skip
    result.assert_outcomes(failed=2)
    error = rows(toy_project)["toy/walk"]["error"]
    assert error == "TaskTimeout: toy/walk timed out after 1 s (--benchmark-timeout)"


def test_a_task_stuck_outside_python_with_both_signals_ignored_is_said_while_it_hangs(
    toy_project: pytest.Pytester,
):
    """At -n 0 nothing inside the process can stop a sleep in C with SIGALRM and SIGUSR2
    ignored: the session says so on stderr, naming the task and the limit, while it hangs."""
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark-task=walk",
         "--benchmark-policy=module:hostile:deaf_outside_python", "--benchmark-timeout=1"],
        cwd=toy_project.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    said = "pytest-benchmarks: toy/walk is past its --benchmark-timeout"
    killer = threading.Timer(120, os.killpg, (session.pid, signal.SIGKILL))  # a bound, not a wait
    killer.start()
    try:
        seen = []
        for line in session.stdout:  # type: ignore[union-attr]
            seen.append(line)
            if said in line:
                break
    finally:
        killer.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session.pid, signal.SIGKILL)
        session.wait()
    assert seen and seen[-1].strip() == (
        "pytest-benchmarks: toy/walk is past its --benchmark-timeout (1 s) and cannot be stopped "
        "from inside: it runs code outside Python with SIGALRM and SIGUSR2 taken from the run; "
        f"end the session (Ctrl-C, or kill -9 {session.pid} where it blocks that too: a run "
        "with a metrics file keeps its finished episodes in its journal for --benchmark-resume), "
        "or run under xdist (-n), whose controller ends such a worker"
    ), seen
    assert (toy_project.path / "asleep").exists()


def test_a_stopped_xdist_worker_is_ended_from_outside_and_keeps_its_episodes(
    toy_project: pytest.Pytester,
):
    """A worker that stops itself (SIGSTOP) answers no signal: the controller ends it when its
    task is past the limit and both graces, and records TaskTimeout with the three episodes the
    task finished; the other task runs on."""
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    result = toy_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--benchmark-policy=module:hostile:stopping",
        "--benchmark-task=walk,stroll", "--benchmark-episodes=8", "--benchmark-batch-size=1",
        "--benchmark-timeout=1", timeout=240,
    )  # fmt: skip
    found = rows(toy_project)
    walk = found["toy/walk"]
    assert walk["error"] == ("TaskTimeout: toy/walk timed out after 1 s (--benchmark-timeout); "
                             "its worker did not stop and was ended from outside")  # fmt: skip
    assert [e["index"] for e in walk["episodes"]] == [0, 1, 2]
    assert found["toy/stroll"]["error"] is None, result.stdout.str()
    assert leftover_processes(str(toy_project.path)) == []


@pytest.mark.parametrize("workers", ["0", "2"])
def test_threads_and_processes_a_policy_leaves_are_ended_with_the_sessions_status(
    toy_project: pytest.Pytester, workers: str
):
    """A policy's non-daemon thread no longer keeps the process alive after "passed", and the
    child it started is killed: one line each, and the session's own exit status. So is a
    daemon it double-forked into its own session (re-parented to the session's process, a
    subreaper), and a child that only looks like multiprocessing's resource tracker."""
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    for factory, line in [
        ("threading_", "leftover: thread 'policy-poller', started during the session and not a "
                       "daemon, was still running at its end; exiting without waiting for it"),
        ("forking", "leftover: process * (python*: *python* -c import time; time.sleep(3600)), "
                    "started during the session and still "
                    "running at its end, was killed"),
        ("daemonizing", "leftover: process * (python*: *python* -c import time; time.sleep(7200)), "
                        "started during the session and still running at its end, was killed"),
        ("imitating", "leftover: process * (python*: *resource_tracker import main; import time; "
                      "time.sleep(5400)), started during the session and still running at its "
                      "end, was killed"),
    ]:  # fmt: skip
        result = toy_project.runpytest_subprocess(
            "-p", "no:cacheprovider", "-n", workers, f"--benchmark-policy=module:hostile:{factory}",
            "--benchmark-task=walk", "--benchmark-episodes=2", timeout=120,
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.OK
        result.assert_outcomes(passed=2)
        assert fnmatch.filter(result.stdout.lines + result.stderr.lines, f"*{line}*"), result
    for name in ("child.txt", "grandchild.txt"):
        pid = int((toy_project.path / name).read_text())
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert leftover_processes(str(toy_project.path)) == []


@pytest.mark.parametrize("workers", ["0", "2"])
def test_multiprocessings_own_helpers_are_no_leftover(toy_project: pytest.Pytester, workers: str):
    """A policy that uses shared memory and a forkserver starts multiprocessing's resource
    tracker and forkserver: they end with the process, unkilled and unreported."""
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    result = toy_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", workers, "--benchmark-policy=module:hostile:sharing",
        "--benchmark-task=walk", "--benchmark-episodes=2", timeout=120,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    lines = result.stdout.lines + result.stderr.lines
    assert (toy_project.path / "block.txt").exists()
    said = fnmatch.filter(lines, "leftover: *") + fnmatch.filter(lines, "*leaked*")
    assert said == [], result
    assert leftover_processes(str(toy_project.path)) == []


def test_an_executor_left_open_is_no_leftover_but_one_still_busy_is(
    toy_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """A policy's ThreadPoolExecutor, never shut down: its idle workers end at exit as
    ``concurrent.futures`` ends them, without a word; a worker still running a task is a leftover."""
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    args = ("-p", "no:cacheprovider", "--benchmark-policy=module:hostile:pooling",
            "--benchmark-task=walk", "--benchmark-episodes=2")  # fmt: skip
    idle = toy_project.runpytest_subprocess(*args, timeout=120)
    assert idle.ret == pytest.ExitCode.OK
    assert not fnmatch.filter(idle.stdout.lines + idle.stderr.lines, "leftover: *"), idle
    monkeypatch.setenv("POOL_BUSY", "1")
    busy = toy_project.runpytest_subprocess(*args, timeout=120)
    assert busy.ret == pytest.ExitCode.OK
    busy.stderr.fnmatch_lines(["leftover: thread 'policy-pool_*', started during the session*"])


@pytest.mark.parametrize("value", ["soon", "1e12", "0"])
def test_bad_timeout_is_one_line(toy_project: pytest.Pytester, value: str):
    """A word, or a limit past what the platform's timers hold (1e12 s overflowed time_t)."""
    result = toy_project.runpytest("-p", "no:cacheprovider", f"--benchmark-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --benchmark-timeout: '{value}' is not a number of seconds > 0 and at most "
            "100000000 (about three years)"
        ]
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


HELD = """
import time
import numpy as np
from pathlib import Path

class Held:
    \"\"\"Says it started, then waits for the test's go before its first action.\"\"\"
    def __init__(self, num_envs):
        self.num_envs = num_envs
    def reset(self, slots, seeds):
        Path("started").touch()
        while not Path("go").exists():
            time.sleep(0.01)
    def act(self, batch):
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "held", "revision": None}

def make(config, num_envs):
    return Held(num_envs)
"""


def beside_a_held_session(
    project: pytest.Pytester,
    args: list[str],
    first: list[str],
    second: list[str],
    env: dict[str, str] | None = None,
) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run a session (``args + second``, with ``env`` added to its environment) while another
    (``args + first``, its policy held before its first action) runs; that one's PID and this
    one's outcome, after the held one finished (exit 0). The held session's process group is
    ended however this ends."""
    project.makepyfile(held=HELD)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    held = subprocess.Popen(
        [*command, "--benchmark-policy=module:held:make", *first],
        cwd=project.path, stdout=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        while not (project.path / "started").exists():
            assert held.poll() is None, "the held session ended before its first episode"
            time.sleep(0.01)
        done = subprocess.run(
            [*command, *second], cwd=project.path, capture_output=True, text=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        (project.path / "go").touch()
        assert held.wait(timeout=300) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(held.pid, signal.SIGKILL)
    return held.pid, done


def test_a_second_session_on_one_metrics_path_is_refused_naming_the_first(
    toy_project: pytest.Pytester,
):
    """While one session runs episodes, a second on its metrics path is refused in one line
    naming the first one's PID, before any episode; the file is the first's run whole."""
    path = toy_project.path / "shared.json"
    args = [f"--benchmark-metrics={path}", "--benchmark-task=walk", "--benchmark-episodes=2", "-q"]
    pid, second = beside_a_held_session(
        toy_project, args, ["--benchmark-seed=1"], ["--benchmark-seed=2"]
    )
    assert second.returncode == pytest.ExitCode.USAGE_ERROR
    assert second.stderr.strip().splitlines() == [
        f"ERROR: --benchmark-metrics: {path} is in use by another session "
        f"(PID {pid}); give this one another path, or wait for that one to end"
    ]
    final = read_metrics(path)
    assert final["run"]["seed"] == 1 and not final["run"]["partial"]
    # The lock of a session that ended is taken over by the next.
    again = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "--benchmark-seed=2"],
        cwd=toy_project.path,
    )
    assert again.returncode == 0 and read_metrics(path)["run"]["seed"] == 2


def test_a_second_session_updating_the_same_snapshots_is_refused(
    toy_project: pytest.Pytester, tmp_path: Path
):
    """--snapshot-update: the test file's snapshot folder is one session's at a time, whatever
    metrics file and temporary folder each has (the folder itself is locked)."""
    args = ["--snapshot-update", "--benchmark-task=walk", "--benchmark-episodes=2", "-q"]
    pid, second = beside_a_held_session(
        toy_project, args, ["--benchmark-metrics=first.json"], ["--benchmark-metrics=second.json"],
        env={"TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout + second.stderr
    folder = toy_project.path / "__benchmark_snapshots__" / "test_toy"
    assert (
        f"--snapshot-update: {folder} is in use by another session (PID {pid})"
        in second.stdout + second.stderr
    )


HOSTILE_POLICIES = """
import json, math, os, sys, time
import numpy as np
from pathlib import Path

class Forward:
    def __init__(self, num_envs, who=None):
        self.num_envs, self.who = num_envs, who
    def reset(self, slots, seeds):
        pass
    def act(self, batch):
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        if self.who == "raise":
            raise KeyError("no identity")
        if self.who is not None:
            return {"none": None, "nan": {"source": "m", "id": "x", "revision": math.nan},
                    "object": {"source": "m", "id": object(), "revision": None}}[self.who]
        return {"source": "module", "id": "hostile", "revision": None}

def make(config, num_envs):
    with open("builds.txt", "a") as f:  # one line per build
        f.write(config.task.id + "\\n")
    return Forward(num_envs)

def raising(config, num_envs):
    raise RuntimeError("the weights are corrupt")

def wrong_signature(config):
    return Forward(1)

def sleeping(config, num_envs):
    time.sleep(3600)

def threading_(config, num_envs):
    import threading
    threading.Thread(target=time.sleep, args=(3600,), name="policy-poller").start()
    return Forward(num_envs)

def pooling(config, num_envs):
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(2, thread_name_prefix="policy-pool")
    pool.submit(time.sleep, 0.01).result()
    if os.environ.get("POOL_BUSY"):
        pool.submit(time.sleep, 3600)
    Forward.pool = pool  # left open, as a policy that never closes its pool leaves it
    return Forward(num_envs)

def forking(config, num_envs):
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    Path("child.txt").write_text(str(child.pid))
    return Forward(num_envs)

def daemonizing(config, num_envs):
    # A daemon as a double fork makes one: a grandchild in its own session, its parent gone.
    # (setsid execs in the background job's own process: $! is the daemon's pid.)
    import subprocess
    subprocess.run(["sh", "-c", f'setsid {sys.executable} -c "import time; time.sleep(7200)" & '
                    "echo $! > grandchild.txt"], check=True)
    return Forward(num_envs)

def imitating(config, num_envs):
    # A child whose command line starts as multiprocessing's resource tracker's does.
    import subprocess
    subprocess.Popen([sys.executable, "-c",
                      "from multiprocessing.resource_tracker import main; import time; "
                      "time.sleep(5400)"])
    return Forward(num_envs)

def sharing(config, num_envs):
    # Shared memory and a forkserver's process: multiprocessing starts its resource tracker
    # and its forkserver, helpers that live as long as the process.
    import multiprocessing
    from multiprocessing import shared_memory
    block = shared_memory.SharedMemory(create=True, size=64)
    block.close()
    block.unlink()
    Path("block.txt").write_text(block.name)
    child = multiprocessing.get_context("forkserver").Process(target=time.sleep, args=(0,))
    child.start()
    child.join()
    return Forward(num_envs)

def deaf_to_alarms(config, num_envs):
    import signal
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(3600)

class DeafToBoth(Forward):
    # SIGALRM ignored and SIGUSR2 taken for itself; each step a loop of Python that never ends.
    def act(self, batch):
        while True:
            time.sleep(0.05)

def deaf_to_both(config, num_envs):
    import signal
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR2, lambda signum, frame: None)
    return DeafToBoth(num_envs)

def deaf_outside_python(config, num_envs):
    # Both signals ignored, then a sleep in C that no ignored signal interrupts.
    import signal
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    Path("asleep").touch()
    time.sleep(3600)

class Rearming(Forward):
    # Takes its time each step and pushes the process's timer on, for a use of its own.
    def act(self, batch):
        import signal
        signal.setitimer(signal.ITIMER_REAL, 60)
        time.sleep(0.05)
        return super().act(batch)

def rearming(config, num_envs):
    return Rearming(num_envs)

class Stopping(Forward):
    # Stops its own process (SIGSTOP) at walk's fourth episode: three have finished.
    started = 0
    def reset(self, slots, seeds):
        Stopping.started += len(slots)
        if Stopping.started == 4 and self.task == "walk":
            import signal
            os.kill(os.getpid(), signal.SIGSTOP)

def stopping(config, num_envs):
    policy = Stopping(num_envs)
    policy.task = config.task.name
    return policy

def identity_none(config, num_envs):
    return Forward(num_envs, "none")

def identity_nan(config, num_envs):
    return Forward(num_envs, "nan")

def identity_object(config, num_envs):
    return Forward(num_envs, "object")

def identity_raise(config, num_envs):
    return Forward(num_envs, "raise")
"""


@pytest.mark.parametrize(
    "spec, error",
    [
        (
            "hostile:raising",
            "raising(config, num_envs) raised RuntimeError: the weights are corrupt",
        ),
        ("hostile:wrong_signature", "wrong_signature(config, num_envs) raised TypeError: *"),
        ("import_raises:make", "importing import_raises raised RuntimeError: no GPU here"),
        ("import_syntax:make", "importing import_syntax raised SyntaxError: *"),
        ("import_exits:make", "importing import_exits raised SystemExit: 3"),
        ("hostile:identity_none", "Forward.identity() returned None; expected a dict *"),
        ("hostile:identity_nan", "Forward.identity() returned *nan*; expected a dict *"),
        ("hostile:identity_object", "Forward.identity() returned *object*; expected a dict *"),
        ("hostile:identity_raise", "Forward.identity() raised KeyError: 'no identity'"),
    ],
)
def test_a_policy_that_cannot_be_built_is_a_one_line_task_error(
    toy_project: pytest.Pytester, spec: str, error: str
):
    toy_project.makepyfile(
        hostile=HOSTILE_POLICIES,
        import_raises="raise RuntimeError('no GPU here')",
        import_syntax="def broken(:\n    pass",
        import_exits="import sys\nsys.exit(3)",
    )
    result = run(toy_project, f"--benchmark-policy=module:{spec}", "--benchmark-task=walk,stroll")
    # Built once per task: the second test of each task reads the task's error.
    result.assert_outcomes(failed=4)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    result.stdout.fnmatch_lines([f"*toy/walk: *{error}", "*toy/walk failed earlier in this*"])
    found = rows(toy_project)
    for task in ("toy/walk", "toy/stroll"):
        assert found[task]["n_episodes"] == 0 and found[task]["planned_episodes"] == 10
        assert fnmatch.fnmatch(found[task]["error"], f"PolicyError: *{error}")
    assert not (toy_project.path / "builds.txt").exists()


def test_the_policy_is_built_once_per_task_and_within_the_timeout(toy_project: pytest.Pytester):
    toy_project.makepyfile(hostile=HOSTILE_POLICIES)
    result = run(
        toy_project, "--benchmark-policy=module:hostile:make", "--benchmark-task=walk,stroll"
    )
    result.assert_outcomes(passed=4)
    builds = (toy_project.path / "builds.txt").read_text().split()
    assert builds == ["toy/walk", "toy/stroll"]
    slow = toy_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-policy=module:hostile:sleeping",
        "--benchmark-task=walk", "--benchmark-timeout=2", timeout=120,
    )  # fmt: skip
    slow.assert_outcomes(failed=2)
    error = rows(toy_project)["toy/walk"]["error"]
    assert error == "TaskTimeout: toy/walk timed out after 2 s (--benchmark-timeout)"


def test_a_non_finite_reward_is_the_tasks_error_and_the_document_stays_valid(
    toy_project: pytest.Pytester,
):
    result = run(
        toy_project, "--benchmark-task=walk,nan-reward", "--benchmark-episodes=3",
        "--benchmark-batch-size=1",
    )  # fmt: skip
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    found = rows(toy_project)
    assert found["toy/walk"]["successes"] == 3
    error = found["toy/nan-reward"]["error"]
    assert error == "RewardError: the env returned a non-finite reward: nan (episode 1 step 3)"
    assert found["toy/nan-reward"]["n_episodes"] == 1  # the episode before it is kept


def test_a_full_disk_is_reported_once_and_the_next_write_retries(
    toy_project: pytest.Pytester, full_disk: Path
):
    # The disk frees up when the second task starts: its write must land, with both tasks.
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + f"""
from pathlib import Path

def pytest_runtest_setup(item):
    if "toy/stroll" in item.nodeid:
        Path({str(full_disk / "filler")!r}).unlink(missing_ok=True)
"""
    )
    metrics = full_disk / "run.json"
    result = run(
        toy_project, "--benchmark-task=walk,stroll", "--benchmark-episodes=2",
        f"--benchmark-metrics={metrics}",
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert out.count("cannot write") == 1
    result.stdout.fnmatch_lines(
        [f"metrics: cannot write {metrics}: OSError: *No space left on device*",
         f"metrics: written to {metrics} again"]
    )  # fmt: skip
    document = read_metrics(metrics)
    assert {row["id"] for row in document["results"]} == {"toy/walk", "toy/stroll"}
    assert not [p.name for p in full_disk.iterdir() if p.name.endswith(".tmp")]


def test_a_metrics_write_that_never_succeeds_fails_the_session(
    toy_project: pytest.Pytester, full_disk: Path
):
    metrics = full_disk / "run.json"
    result = run(toy_project, "--benchmark-task=walk", f"--benchmark-metrics={metrics}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"metrics: NOT written to {metrics}: OSError: *"])
    assert not metrics.exists()


def test_a_metrics_path_that_is_no_regular_file_is_refused(toy_project: pytest.Pytester):
    target = toy_project.path / "kept.json"
    target.write_text("{}")
    link = toy_project.path / "link.json"
    link.symlink_to(target)
    for path, why in [
        ("/dev/null", "/dev/null is not a regular file; give a new path or a regular file"),
        (str(link), f"{link} is a symbolic link (to {target}); give the file itself"),
    ]:
        result = run(toy_project, f"--benchmark-metrics={path}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: --benchmark-metrics: cannot write {path}: {why}"])
    assert Path("/dev/null").is_char_device() and link.is_symlink()
    assert target.read_text() == "{}"


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_written_files_take_the_umask_mode(tmp_path: Path, umask: int):
    previous = os.umask(umask)
    try:
        write_atomic(tmp_path / "run.json", {"schema_version": 1})
    finally:
        os.umask(previous)
    assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_policy_fixture_of_the_wrong_kind_is_one_line(toy_project: pytest.Pytester):
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + """
import pytest

@pytest.fixture
def policy():
    return "my-policy-name"
"""
    )
    result = run(toy_project, "--benchmark-task=walk")
    result.assert_outcomes(failed=2)
    line = (
        "toy/walk: the policy fixture gave str, not a policy (reset, act, identity); is a "
        "fixture of your own named 'policy' replacing the plugin's?"
    )
    result.stdout.fnmatch_lines([line])
    assert rows(toy_project)["toy/walk"]["error"] == "PolicyError: " + line.split(": ", 1)[1]
