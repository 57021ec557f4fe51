"""``--benchmark-ray`` on a real Ray cluster of a head and two worker nodes of one CPU each
(separate ``ray start`` processes, ``local_ray``): tasks placed on the nodes with a free CPU,
per-episode records equal to the session's own with -n 0, and a node killed mid-task (its
raylet and everything under it) losing none of the episodes the task finished there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import toybench  # noqa: F401  (registers toy for the API's calls)
from held import ARGS, EPISODES, HOLD, NOTING_POLICY, held
from helpers import TOY_CONFTEST, TOY_TESTS, XDIST_VARIABLES, outcomes, read_metrics

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.cluster.local_ray import LocalRay, cluster, unavailable

pytestmark = pytest.mark.e2e

METAWORLD_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().n_episodes == 3
"""


@pytest.fixture
def ray_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalRay]:
    why = unavailable()
    if why:
        pytest.skip(f"no Ray cluster here: {why}")
    for name in XDIST_VARIABLES:  # the nodes' workers inherit this environment
        monkeypatch.delenv(name, raising=False)
    with cluster(nodes=2, cpus=1) as running:
        for name, value in running.env.items():
            monkeypatch.setenv(name, value)
        yield running


def session(pytester: pytest.Pytester, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *args], cwd=pytester.path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_a_session_and_the_api_on_the_cluster_equal_them_without_ray(
    pytester: pytest.Pytester, ray_cluster: LocalRay
):
    """Meta-World's reach, push and button-press on the cluster: records equal to -n 0's; and
    the API's keyword on the toy's two tasks, equal to the API without it."""
    pytester.makepyfile(test_mw=METAWORLD_TESTS)
    args = ["-p", "no:cacheprovider", "--benchmark-env=metaworld",
            "--benchmark-task=reach-v3,push-v3,button-press-v3", "--benchmark-episodes=3"]  # fmt: skip
    ray = session(pytester, *args, "--benchmark-ray=auto", "--benchmark-metrics=ray.json")
    out, _ = ray.communicate(timeout=300)
    assert ray.returncode == 0, out
    assert "ray: auto, 3 nodes, 2 CPUs, 0 GPUs; each task steps 1 env on one node" in out
    pytester.runpytest(*args, "--benchmark-metrics=whole.json").assert_outcomes(passed=3)
    on_ray = read_metrics(pytester.path / "ray.json")
    assert outcomes(on_ray) == outcomes(read_metrics(pytester.path / "whole.json"))
    assert on_ray["run"]["partial"] is False and not (pytester.path / "ray.json.journal").exists()

    (pytester.path / "test_mw.py").unlink()
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)

    # The API's keyword drives the same pool.
    def episodes(results: list) -> dict[str, list]:
        return {r.task.id: [e.outcome() for e in r.episodes] for r in results}

    local = evaluate("toy", tasks=["walk", "stroll"], episodes=3)
    remote = evaluate("toy", tasks=["walk", "stroll"], episodes=3, ray="auto")
    assert episodes(remote.results) == episodes(local.results) != {}


def _kill_walks_node(
    pytester: pytest.Pytester, ray_cluster: LocalRay, run: subprocess.Popen[str]
) -> str:
    """Once walk holds, kill its node: the raylet its Ray worker runs under, and every process
    under that raylet; then let the carried-on task through and wait for the session."""
    raylet = psutil.Process(held(pytester, run, limit_s=300)).parent()
    assert raylet.pid in {p.pid for p in ray_cluster.raylets()}
    ray_cluster.kill_node(raylet)
    (pytester.path / "go").touch()
    out, _ = run.communicate(timeout=300)
    return out


def test_a_node_killed_or_a_session_interrupted_mid_task_loses_no_finished_episode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """walk's node is killed (its raylet and every process under it) while walk holds at its
    fourth episode: the three finished are kept, the task is carried on on the other node from
    the fourth, no finished episode runs again, and the run equals the session's with -n 0.
    Then a session interrupted (SIGINT) while walk holds keeps those three in its metrics JSON,
    stops what runs on the cluster, and --benchmark-resume carries walk on from them."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS, noting=NOTING_POLICY)
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # A task's environment is its node's: the policy's hold is set where the nodes start.
    with cluster(nodes=2, cpus=1, env={**os.environ, "HOLD_AT": str(HOLD)}) as ray_cluster:
        # Its address, not auto: auto may find another test's cluster on this machine.
        on_ray = ["-m", "pytest", *ARGS, "--benchmark-env=toy",
                  f"--benchmark-ray={ray_cluster.address}"]  # fmt: skip
        run = subprocess.Popen(
            [sys.executable, *on_ray, "--benchmark-metrics=ray.json"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        out = _kill_walks_node(pytester, ray_cluster, run)
        assert run.returncode == 0, out
        lost = f"lost after {HOLD - 1} of {EPISODES} episodes"
        assert "toy/walk: node " in out and lost in out, out
        # HOLD starts on the lost node (3 finished, the held one cut short), then the 5 left.
        started = pytester.path / "started-walk.txt"
        assert len(started.read_text()) == HOLD + EPISODES - (HOLD - 1)

        ray_cluster.add_node(1)
        for name in ("started-walk.txt", "go"):
            (pytester.path / name).unlink()
        run = subprocess.Popen(
            [sys.executable, *on_ray, "--benchmark-metrics=cut.json"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        held(pytester, run, limit_s=300)
        _ended_on_the_cluster(pytester.path / "cut.json.journal", "toy/stroll", run)
        run.send_signal(signal.SIGINT)
        out, _ = run.communicate(timeout=120)
        assert run.returncode == pytest.ExitCode.INTERRUPTED, out
        cut = {r["id"]: r for r in read_metrics(pytester.path / "cut.json")["results"]}
        assert [e["index"] for e in cut["toy/walk"]["episodes"]] == list(range(HOLD - 1))
        # The Ctrl-C named on the task it stopped; the task that had ended stays as it ended.
        assert cut["toy/walk"]["error"] == (
            f"KeyboardInterrupt: the session stopped; toy/walk's Ray task was cancelled after "
            f"{HOLD - 1} of {EPISODES} episodes"
        )
        assert cut["toy/stroll"]["error"] is None and len(cut["toy/stroll"]["episodes"]) == EPISODES
        assert not [p for p in ray_cluster.processes() if p.name().startswith("ray::run_on")]
        (pytester.path / "go").touch()
        resumed = subprocess.run(
            [sys.executable, *on_ray, "--benchmark-metrics=cut.json", "--benchmark-resume"],
            cwd=pytester.path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stdout
    assert len(started.read_text()) == HOLD + EPISODES - (HOLD - 1)  # the 5 left, again
    pytester.runpytest(*ARGS, "--benchmark-env=toy", "--benchmark-metrics=whole.json")
    whole = outcomes(read_metrics(pytester.path / "whole.json"))
    for name in ("ray.json", "cut.json"):
        assert outcomes(read_metrics(pytester.path / name)) == whole, name


def _ended_on_the_cluster(journal: Path, task: str, run: subprocess.Popen[str]) -> None:
    """Until the session has journaled ``task``'s end (its row arrived from its node)."""
    _journaled(journal, task, "task_ended", 1, run)


def _journaled(journal: Path, task: str, kind: str, count: int, run: subprocess.Popen[str]) -> None:
    """Until the session's journal holds ``count`` events of ``kind`` for ``task``: what a
    node sent has reached the session, not only left the node."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()[0]
        lines = [line for f in journal.glob("*.jsonl") for line in f.read_text().splitlines()]
        if sum(f'"{kind}"' in line and f'"{task}"' in line for line in lines) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{task}: never {count} {kind} in the session's journal")


def test_what_the_cluster_cannot_run_is_refused_in_one_line_before_any_episode(
    pytester: pytest.Pytester, ray_cluster: LocalRay
):
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    cases = {
        ("--benchmark-device=cuda",): (
            "--benchmark-device=cuda: the Ray cluster at auto has no GPU (3 nodes, at most 1 "
            "CPUs each, 0 GPUs); use --benchmark-device=cpu, or add a node with a GPU"
        ),
        ("--benchmark-batch-size=2",): (
            "--benchmark-ray=auto: a task steps 2 envs and needs as many CPUs on one node, the "
            "cluster has 3 nodes, at most 1 CPUs each, 0 GPUs; lower --benchmark-batch-size"
        ),
        ("-n", "2"): (
            "--benchmark-ray: the tasks run on the Ray cluster and this session is their "
            "controller; drop -n 2"
        ),
    }
    for extra, line in cases.items():
        result = pytester.runpytest_subprocess(
            "--benchmark-env=toy", "--benchmark-task=walk", "--benchmark-ray=auto", *extra
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"ERROR: {line}" in result.errlines, result.errlines
        assert not (pytester.path / "benchmark-results").exists()


SIZE = 32


@pytest.fixture(scope="module")
def act_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small ACT policy on Meta-World pixels; made before any test's pytester, which would
    unload what LeRobot imports (torchvision cannot be imported twice in one process)."""
    pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")
    import lerobot_models

    pixels = {"observation.state": (39,), "observation.images.corner2": (3, SIZE, SIZE)}
    return lerobot_models.checkpoint(
        "act", tmp_path_factory.mktemp("served") / "act", pixels, action_dim=4, chunk_size=5,
        n_action_steps=5,
    )  # fmt: skip


def test_a_served_policy_has_one_server_per_node_that_acts_for_its_tasks(
    pytester: pytest.Pytester, ray_cluster: LocalRay, act_checkpoint: Path
):
    """A LeRobot ACT checkpoint served (--benchmark-policy-server=on, on the CPU as on a GPU):
    each node that runs a task starts one server, its tasks act through it, and the records are
    batched inference's, as the same run's in one process."""
    checkpoint, size = act_checkpoint, SIZE
    pytester.makepyfile(test_mw=METAWORLD_TESTS.replace("== 3", "== 2"))
    args = ["-p", "no:cacheprovider", "--benchmark-env=metaworld", f"--benchmark-policy=lerobot:{checkpoint}",
            "--benchmark-task=reach-v3,push-v3", "--benchmark-episodes=2", "--benchmark-max-steps=12",
            "--benchmark-obs=pixels", f"--benchmark-image-size={size}", "--benchmark-device=cpu"]  # fmt: skip
    served = session(pytester, *args, "--benchmark-ray=auto", "--benchmark-policy-server=on",
                     "--benchmark-metrics=served/m.json")  # fmt: skip
    out, _ = served.communicate(timeout=600)
    assert served.returncode == 0, out
    logs = sorted((pytester.path / "served").glob("policy-server-*.log"))
    assert 1 <= len(logs) <= 2 and out.count("policy server on node ") == len(logs), out
    assert all("gatherings" in log.read_text() for log in logs), [p.read_text() for p in logs]
    evaluate("metaworld", f"lerobot:{checkpoint}", tasks=["reach-v3", "push-v3"], episodes=2,
             max_steps=12, obs="pixels", image_size=size, device="cpu", batch_size=1,
             batched_inference=True, metrics=pytester.path / "batched.json")  # fmt: skip
    on_ray = read_metrics(pytester.path / "served/m.json")
    assert (on_ray["run"]["policy_server"], on_ray["run"]["batched_inference"]) == ("on", True)
    reference = read_metrics(pytester.path / "batched.json")

    def fields(document: dict) -> dict[str, list]:
        keys = ("index", "seed", "success", "steps")
        return {r["id"]: [[e[k] for k in keys] for e in r["episodes"]] for r in document["results"]}

    assert fields(on_ray) == fields(reference)


def test_a_cluster_that_disappears_mid_task_gives_one_line_per_task_and_keeps_what_arrived(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """The whole cluster is killed (head and node) while walk holds at its fourth episode:
    each task fails in one line that says the cluster is gone, no traceback, and the metrics
    JSON keeps walk's three finished episodes, so --benchmark-resume can carry it on."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS, noting=NOTING_POLICY)
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with cluster(nodes=1, cpus=1, env={**os.environ, "HOLD_AT": str(HOLD)}) as ray_cluster:
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", *ARGS, "--benchmark-env=toy",
             f"--benchmark-ray={ray_cluster.address}", "--benchmark-metrics=gone.json"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        held(pytester, run, limit_s=300)
        # The three finished episodes have reached the session: those still on their way when
        # the cluster goes are lost with it (docs/scaling.md).
        _journaled(pytester.path / "gone.json.journal", "toy/walk", "episode_finished",
                   HOLD - 1, run)  # fmt: skip
        ray_cluster.stop()
        out, _ = run.communicate(timeout=300)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    gone = f"the Ray cluster at {ray_cluster.address} is gone"
    for task in ("toy/walk", "toy/stroll"):
        assert [line for line in out.splitlines() if task in line and gone in line], out
    rows = {r["id"]: r for r in read_metrics(pytester.path / "gone.json")["results"]}
    assert [e["index"] for e in rows["toy/walk"]["episodes"]] == list(range(HOLD - 1))
    assert gone in rows["toy/walk"]["error"] and gone in rows["toy/stroll"]["error"]
