"""Whole pytest sessions with the plugin (pytester subprocesses, real xdist workers)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import jsonschema
import pytest
from helpers import outcomes, read_metrics, run, run_in_subprocess

from pytest_benchmarks.metrics.document import schema


def test_ids_metrics_and_summary(toy_project: pytest.Pytester):
    result = run(toy_project, "-v", "--benchmark-episodes=5")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*test_rollout[[]toy/walk[]] PASSED*",
            "*test_success_rate[[]toy/stroll[]] PASSED*",
            "*benchmark results*",
            "toy/stroll *5/5  100.0%  [[] 56.6, 100.0[]]*",
            "overall *10/10  100.0%*(2 tasks)",
        ]
    )
    document = read_metrics(toy_project.path / "benchmark-results" / "metrics.json")
    jsonschema.validate(document, schema())
    assert [row["id"] for row in document["results"]] == ["toy/stroll", "toy/walk"]
    walk = document["results"][1]
    assert walk["description"] == "Walk to the end of the corridor."
    assert [e["index"] for e in walk["episodes"]] == [0, 1, 2, 3, 4]
    assert [e["seed"] for e in walk["episodes"]] == [1000, 1001, 1002, 1003, 1004]
    assert [e["init_state"] for e in walk["episodes"]] == [0, 1, 2, 3, 0]
    # Starting 0.1 further back per init state takes one more step at speed 0.2 every other state.
    assert [e["steps"] for e in walk["episodes"]] == [5, 6, 6, 7, 5]
    assert document["run"]["partial"] is False and document["run"]["exitstatus"] == 0
    assert document["overall"]["n_episodes"] == 10
    assert document["per_group"]["corridor"]["pc_success"] == 100.0
    assert document["per_task"][1]["metrics"]["successes"] == [True] * 5
    # LeRobot's eval_info.json counts at every level (its Wilson interval, in percent).
    for level, n, low in ((document["overall"], 10, 72.25), (document["per_group"]["corridor"],
                          10, 72.25), (document["per_task"][1], 5, 56.55)):  # fmt: skip
        assert (level["n_episodes"], level["n_success"], level["pc_success"]) == (n, n, 100.0)
        assert level["pc_success_ci95"] == [pytest.approx(low, abs=0.01), 100.0]


def test_results_do_not_depend_on_batch_size_or_workers(toy_project: pytest.Pytester):
    runs = {}
    for name, args in {
        "b1": ["--benchmark-batch-size=1"],
        "b2": ["--benchmark-batch-size=2"],
        "b4": ["--benchmark-batch-size=4", "--benchmark-sync"],
        "n2": ["-n", "2"],
    }.items():
        path = toy_project.path / f"{name}.json"
        result = run(toy_project, "--benchmark-episodes=7", f"--benchmark-metrics={path}", *args)
        result.assert_outcomes(passed=4)
        runs[name] = outcomes(read_metrics(path))
    assert runs["b1"] == runs["b2"] == runs["b4"] == runs["n2"]
    assert read_metrics(toy_project.path / "b4.json")["results"][0]["batch_size"] == 4


def test_a_task_runs_once_on_one_worker(toy_project: pytest.Pytester):
    toy_project.makepyfile(
        test_more="""
import pytest

@pytest.mark.benchmark_env("toy")
def test_again(evaluate):
    assert evaluate().n_episodes == 3
"""
    )
    result = run(toy_project, "-n", "2", "-v", "--benchmark-episodes=3")
    result.assert_outcomes(passed=6)
    worker_of: dict[str, set[str]] = {}
    for line in result.outlines:
        found = re.search(r"\[(gw\d)\].*\[(toy/\w+)\]", line)
        if found:
            worker_of.setdefault(found.group(2), set()).add(found.group(1))
    assert set(worker_of) == {"toy/walk", "toy/stroll"}
    assert all(len(workers) == 1 for workers in worker_of.values()), worker_of
    document = read_metrics(toy_project.path / "benchmark-results" / "metrics.json")
    assert len(document["results"]) == 2


def test_benchmark_env_deselects_the_others(toy_project: pytest.Pytester):
    toy_project.makepyfile(
        test_other="""
import pytest

@pytest.mark.benchmark_env("absent")
def test_absent(evaluate):
    evaluate()
"""
    )
    result = run(toy_project, "--benchmark-env=toy", "--benchmark-episodes=2")
    result.assert_outcomes(passed=4, deselected=1)
    result.stdout.fnmatch_lines(["benchmarks deselected by --benchmark-env=toy: absent (1 test)"])
    # Under xdist the workers deselect; the controller's summary says the same.
    result = run(toy_project, "--benchmark-env=toy", "--benchmark-episodes=2", "-n", "2")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["benchmarks deselected by --benchmark-env=toy: absent (1 test)"])


def test_missing_extra_is_skipped_with_its_name(toy_project: pytest.Pytester):
    toy_project.makepyfile(
        test_other="""
import pytest

@pytest.mark.benchmark_env("absent")
def test_absent(evaluate):
    evaluate()
"""
    )
    result = run(toy_project, "-rs", "--benchmark-episodes=2")
    result.assert_outcomes(passed=4, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*absent is not installed*pip install 'pytest-benchmarks[[]absent[]]'*"]
    )


def test_task_selection_and_group(toy_project: pytest.Pytester):
    result = run(toy_project, "--benchmark-task=walk", "--benchmark-episodes=2", "-v")
    result.assert_outcomes(passed=2)
    result = run(toy_project, "--benchmark-task=toy/crash,corridor", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_rollout[[]toy/walk[]]", "*test_rollout[[]toy/crash[]]"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--benchmark-env=nope"],
            "--benchmark-env: unknown benchmark 'nope'; valid: *metaworld*toy, lerobot:TYPE",
        ),
        (["--benchmark-env=absent"], "--benchmark-env: absent is not installed*"),
        (["--benchmark-env=toi"], "--benchmark-env: unknown benchmark 'toi' (did you mean toy?)*"),
        (
            ["--benchmark-task=strol"],
            "--benchmark-task: unknown toy task or group 'strol' (did you mean stroll?); valid *",
        ),
        (
            ["--benchmark-task=run"],
            "--benchmark-task: unknown toy task or group 'run'; valid groups: corridor; valid tasks: walk, stroll, crash, interrupt, killed, hang, reset-error, step-error, stubborn, frozen, nan-reward, killed-at-start, terminate, slow-start",
        ),
        (
            ["--benchmark-policy=magic"],
            "--benchmark-policy: unknown policy 'magic'; valid: scripted, scripted+noise:FRACTION, random, noop, hub:REPO_ID[[]@REVISION[]], lerobot:REPO_ID_OR_DIR, module:package.module:factory, or a checkpoint directory (./path or /path)",
        ),
        (
            ["--benchmark-episodes=0"],
            "--benchmark-episodes: '0' is not an integer in [[]1, 1000000[]]",
        ),
        (
            ["--benchmark-episodes=1000000000"],
            "--benchmark-episodes: '1000000000' is not an integer in [[]1, 1000000[]]",
        ),
        (
            ["--benchmark-seed=4294967296"],
            "--benchmark-seed: '4294967296' is not an integer in [[]0, 2147483647[]]",
        ),
        (
            ["--benchmark-episodes="],
            "--benchmark-episodes: empty value; give one, or leave the option out",
        ),
        (
            ["--benchmark-task= "],
            "--benchmark-task: empty value; give one, or leave the option out",
        ),
        (
            ["--benchmark-obs=depth"],
            "--benchmark-obs: 'depth' is not one of state, pixels, lerobot",
        ),
        (
            ["--benchmark-render=pretty"],
            "--benchmark-render: 'pretty' is not one of faithful, fast",
        ),
        (
            ["--benchmark-camera-map=agentveiw=camera1"],
            "--benchmark-camera-map: no camera 'agentveiw' in the selected benchmarks; valid: none",
        ),
        (
            ["--benchmark-image-size=12x"],
            "--benchmark-image-size: '12x' is not N or HxW (e.g. 224x224)",
        ),
        (
            ["--benchmark-camera-map=agentview"],
            "--benchmark-camera-map: 'agentview' is not OLD=NEW; give OLD=NEW[[],...[]] or a JSON "
            'object, e.g. agentview_image=camera1 or \'{"agentview_image": "camera1"}\'',
        ),
        (
            ['--benchmark-camera-map=["agentview", "camera1"]'],
            '--benchmark-camera-map: \'[[]"agentview", "camera1"[]]\' is a JSON list, not '
            "OLD=NEW pairs; give OLD=NEW[[],...[]] or a JSON object, e.g. agentview_image=camera1 "
            'or \'{"agentview_image": "camera1"}\'',
        ),
        (
            ["--benchmark-image-size=20000"],
            "--benchmark-image-size: 20000x20000 is too large: each side at most 16384 (the "
            "renderer's largest framebuffer; e.g. 224x224)",
        ),
        (
            ["--benchmark-env-arg=--env.obs_type=pixels"],
            "--benchmark-env-arg: --env.obs_type=pixels is lerobot-eval's --env.FIELD=VALUE; give "
            "FIELD=VALUE here (obs_type=pixels)",
        ),
        (
            ["--benchmark-rename-map={observation.image: camera1}"],
            "--benchmark-rename-map: not a JSON object (Expecting property name enclosed in "
            'double quotes: *); e.g. \'{"observation.image": "observation.images.camera1"}\'',
        ),
        (
            ["--benchmark-policy=scripted+noise:2"],
            "--benchmark-policy: policy 'scripted+noise:2': scripted+noise needs a fraction of steps in [[]0, 1[]], e.g. scripted+noise:0.5",
        ),
        (["--benchmark-batch-size=x"], "--benchmark-batch-size: 'x' is not an integer >= 0"),
        (
            ["--benchmark-env=toy,metaworld", "--benchmark-task=walk"],
            "--benchmark-task: metaworld (named by --benchmark-env) has none of the tasks given (walk); add one of its tasks or groups (*), or leave it out of --benchmark-env",
        ),
        (
            ["--benchmark-metrics=/etc/hostname/m.json"],
            "--benchmark-metrics: cannot write /etc/hostname/m.json: *",
        ),
    ],
)
def test_bad_input_is_one_line_at_configure(toy_project: pytest.Pytester, args, message):
    result = run(toy_project, "--benchmark-env=toy", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_a_server_wait_that_auto_leaves_unserved_is_said_in_the_header(
    pytester: pytest.Pytester,
):
    """Whether auto serves depends on the machine and the workers (a shared ini may set the
    wait for GPU runs), so the session runs and says the wait does nothing."""
    pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")
    pytester.makepyfile("def test_nothing(): pass")
    checkpoint = pytester.mkdir("checkpoint")
    result = run(pytester, "--benchmark-env=metaworld", "--benchmark-task=reach-v3",
                 f"--benchmark-policy=lerobot:{checkpoint}", "--benchmark-device=cpu",
                 "--benchmark-policy-server-wait=10")  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["--benchmark-policy-server-wait=10: no policy server in this run "
         "(--benchmark-policy-server is off, or auto, which serves a lerobot: policy on a CUDA "
         "device, under xdist or on Ray), so it waits for nothing"]
    )  # fmt: skip
    # Off, or a policy that is never served: the same line, and the session runs (an ini
    # shared with GPU runs may set the wait).
    for extra in (["--benchmark-policy-server=off"], ["--benchmark-policy=scripted"]):
        again = run(pytester, "--benchmark-env=metaworld", "--benchmark-task=reach-v3",
                    f"--benchmark-policy=lerobot:{checkpoint}", "--benchmark-device=cpu",
                    "--benchmark-policy-server-wait=10", *extra)  # fmt: skip
        again.assert_outcomes(passed=1)
        again.stdout.fnmatch_lines(["--benchmark-policy-server-wait=10: no policy server*"])


def test_unknown_benchmark_in_marker(pytester: pytest.Pytester):
    pytester.makepyfile(
        """
import pytest

@pytest.mark.benchmark_env("nope")
def test_x(evaluate):
    pass
"""
    )
    result = run(pytester)
    result.stdout.fnmatch_lines(
        # (valid: also the toy benchmark, where an earlier session in this process registered it)
        ["*@benchmark_env('nope') names no benchmark; valid: *aloha, libero, metaworld, pusht*"]
    )
    assert result.ret != 0


def test_crashed_worker_loses_only_its_task(toy_project: pytest.Pytester):
    result = run(
        toy_project, "-n", "2", "--benchmark-task=walk,stroll,crash", "--benchmark-episodes=2"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*crash*"])
    document = read_metrics(toy_project.path / "benchmark-results" / "metrics.json")
    ids = {row["id"]: row for row in document["results"]}
    assert ids["toy/walk"]["successes"] == 2 and ids["toy/stroll"]["successes"] == 2
    assert ids["toy/crash"]["error"].startswith("WorkerCrashed: xdist worker gw")
    assert "exited with status 3 running" in ids["toy/crash"]["error"]


def test_failing_task_records_its_error(toy_project: pytest.Pytester):
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + """
import toybench, numpy as np
toybench.Walker.act = lambda self, batch: np.full((len(batch["task"]), 1), np.nan, np.float32)
"""
    )
    # In a process of its own: its conftest patches toybench, which this process may hold.
    result = run_in_subprocess(toy_project, "--benchmark-task=walk", "--benchmark-episodes=2")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*ActionError: actions hold NaN or inf (policy scripted:toy.walker; episode 0 step 0)*"]
    )
    row = read_metrics(toy_project.path / "benchmark-results" / "metrics.json")["results"][0]
    assert row["error"].startswith("ActionError: actions hold NaN or inf")
    assert row["n_episodes"] == 0 and row["planned_episodes"] == 2


def test_loads_beside_pytest_benchmark(pytester: pytest.Pytester):
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        [
            "robot-policy simulation benchmarks (pytest-benchmarks):",
            "*--benchmark-env=NAME[[],NAME[]]*",
            "*--benchmark-sync*",
        ]
    )
    assert "--benchmark-json" in result.stdout.str()  # pytest-benchmark's own option
    assert result.ret == 0
    pytester.makepyfile(
        """
def test_timed(benchmark):
    assert benchmark(sum, [1, 2]) == 3
"""
    )
    result = run(pytester, "--strict-markers")
    result.assert_outcomes(passed=1)


def test_loading_the_plugin_imports_no_simulator_nor_scipy():
    # Every pytest process loads the plugin and registers the built-in benchmarks, the xdist
    # controller before it starts any worker: a simulator or scipy (0.5 s) there delays them all.
    heavy = ("scipy", "mujoco", "metaworld", "robosuite", "libero", "torch", "lerobot")
    code = (
        "import sys, pytest_benchmarks.plugin\n"
        "from pytest_benchmarks.core import catalog\n"
        "catalog.get('metaworld'), catalog.get('libero')\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_ctrl_c_keeps_what_finished(toy_project: pytest.Pytester):
    # Tasks run in the benchmark's order: walk and stroll finish, then interrupt gets SIGINT.
    toy_project.makepyfile(
        test_toy="""
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_success_rate(evaluate):
    assert evaluate().successes > 0
"""
    )
    result = run_in_subprocess(  # its task signals its own process
        toy_project,
        "--benchmark-task=walk,stroll,interrupt",
        "--benchmark-episodes=3",
        "--benchmark-batch-size=1",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    metrics = toy_project.path / "benchmark-results" / "metrics.json"
    document = read_metrics(metrics)
    jsonschema.validate(document, schema())
    assert document["run"]["partial"] is True
    rows = {row["id"]: row for row in document["results"]}
    assert rows["toy/walk"]["successes"] == 3 and rows["toy/stroll"]["successes"] == 3
    assert rows["toy/interrupt"]["error"].startswith("KeyboardInterrupt")
    assert rows["toy/interrupt"]["n_episodes"] == 0
    # No temporary file is left; the journal is kept for --benchmark-resume (and the lock's
    # file where filelock leaves it).
    names = {p.name for p in metrics.parent.iterdir()} - {"metrics.json.lock"}
    assert names == {"metrics.json", "metrics.json.journal"}


def test_sigterm_is_handled_like_ctrl_c(toy_project: pytest.Pytester):
    # CI runners and `timeout` stop a job with SIGTERM: the summary is printed, and the metrics
    # JSON keeps the finished tasks, the running task's finished episodes and the exit status.
    result = run_in_subprocess(  # its task signals its own process
        toy_project,
        "--benchmark-task=walk,terminate",
        "--benchmark-episodes=3",
        "--benchmark-batch-size=1",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*benchmark results*", "toy/terminate *1/1 * (1 of 3 planned)  ERROR Terminated: SIGTERM"]
    )
    document = read_metrics(toy_project.path / "benchmark-results" / "metrics.json")
    jsonschema.validate(document, schema())
    assert document["run"]["partial"] is True
    assert document["run"]["exitstatus"] == pytest.ExitCode.INTERRUPTED
    rows = {row["id"]: row for row in document["results"]}
    assert rows["toy/walk"]["successes"] == 3
    assert rows["toy/terminate"]["error"] == "Terminated: SIGTERM"
    assert rows["toy/terminate"]["n_episodes"] == 1


def test_sigterm_under_xdist_keeps_the_running_tasks_row(toy_project: pytest.Pytester):
    """SIGTERM to the controller reaches the workers; the task a worker was running when it
    stopped still gets its row."""
    metrics = toy_project.path / "run.json"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         "--benchmark-task=walk,stroll,hang", "--benchmark-episodes=3",
         "--benchmark-batch-size=1", f"--benchmark-metrics={metrics}"],
        cwd=toy_project.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until walk and stroll are in; hang then hangs
        if metrics.exists() and len(read_metrics(metrics)["results"]) == 2:
            break
        time.sleep(0.2)
    time.sleep(1.0)  # hang's episode is under way
    session.send_signal(signal.SIGTERM)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "benchmark results" in out
    document = read_metrics(metrics)
    rows = {row["id"]: row for row in document["results"]}
    assert rows["toy/hang"]["error"] == "Terminated: SIGTERM"
    assert rows["toy/walk"]["successes"] == rows["toy/stroll"]["successes"] == 3
    assert document["run"]["exitstatus"] == pytest.ExitCode.INTERRUPTED


def test_metaworld_records_match_across_batch_sizes_and_workers(pytester: pytest.Pytester):
    pytester.makepyfile(
        test_mw="""
import pytest

@pytest.mark.benchmark_env("metaworld")
def test_success_rate(evaluate):
    assert evaluate().error is None
"""
    )
    common = [
        "--benchmark-task=reach-v3,push-v3",
        "--benchmark-episodes=4",
        "--benchmark-max-steps=150",
    ]
    runs = {}
    for name, args in {
        "n0": [],
        "n2": ["-n", "2"],
        "b2": ["--benchmark-batch-size=2"],
        "b4": ["--benchmark-batch-size=4"],
    }.items():
        path = pytester.path / f"{name}.json"
        run(pytester, *common, f"--benchmark-metrics={path}", *args).assert_outcomes(passed=2)
        runs[name] = outcomes(read_metrics(path))
    assert runs["n0"] == runs["n2"] == runs["b2"] == runs["b4"]
    assert len(runs["n0"]["metaworld/push-v3"]) == 4


def test_ini_paths_are_relative_to_the_ini_file(toy_project: pytest.Pytester):
    """As pytest does for its own ini paths: run from a subdirectory, the metrics still land
    beside the ini file; a command-line path is relative to where pytest runs."""
    toy_project.makeini("[pytest]\nbenchmark_metrics = out/run.json\n")
    sub = toy_project.mkdir("tests")
    toy_project.path.joinpath("test_toy.py").rename(sub / "test_toy.py")
    toy_project.path.joinpath("conftest.py").rename(sub / "conftest.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark-task=walk",
         "--benchmark-episodes=2"],
        cwd=sub, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert read_metrics(toy_project.path / "out" / "run.json")["results"][0]["id"] == "toy/walk"
    assert not (sub / "out").exists()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark-task=walk",
         "--benchmark-episodes=2", "--benchmark-metrics=here.json"],
        cwd=sub, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert (sub / "here.json").is_file()


def test_the_vector_env_fixture_is_a_gymnasium_vector_env(toy_project: pytest.Pytester):
    toy_project.makepyfile(
        test_toy="""
import numpy as np
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_steps(vector_env):
    config = vector_env.config
    assert config.action_space.shape == (1,) and config.observation_space.shape == (2,)
    assert {k: f.shape for k, f in config.features.items()} == {"observation.state": (2,)}
    obs, _ = vector_env.reset(seed=0)
    assert obs.shape == (vector_env.num_envs, 2)
    actions = np.ones((vector_env.num_envs, *config.action_space.shape), np.float32)
    obs, rewards, terminated, truncated, info = vector_env.step(actions)
    assert obs[:, 1].tolist() == [1.0] * vector_env.num_envs
    assert vector_env.single_action_space == config.action_space
"""
    )
    run(toy_project, "--benchmark-task=walk", "--benchmark-batch-size=2").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("benchmark_episodes = abc", "'abc' is not an integer in [1, 1000000]"),
        ("benchmark_sync = maybe", "invalid truth value 'maybe'; give true or false"),
    ],
)
def test_a_bad_ini_value_names_its_key_and_file(toy_project: pytest.Pytester, line, error):
    """Not the command-line flag, which was never passed."""
    ini = toy_project.makeini(f"[pytest]\n{line}\n")
    key = line.split(" = ")[0]
    flag = "--" + key.replace("_", "-")
    result = toy_project.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {key} (ini key for {flag}, in {ini}): {error}"])
