"""``--benchmark-policy-server``: one process holds a lerobot: policy and acts for every xdist
worker's env slots together. Real pytest sessions, real xdist workers, a real LeRobot
checkpoint on the CPU (the server runs there as on a GPU): requests from both workers share
forward passes, the records are batched inference's, and a server that fails or ends ends the
tasks waiting on it with one line, their finished episodes kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import read_metrics

from pytest_benchmarks.api import evaluate

pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")
pytest.importorskip("zmq", reason="pyzmq is not installed")

import lerobot_models

SIZE = 32
PIXELS = {"observation.state": (39,), "observation.images.corner2": (3, SIZE, SIZE)}
TASKS = "reach-v3,push-v3"
TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().error is None
"""


@pytest.fixture(scope="module")
def act_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small ACT policy on Meta-World pixels (action chunks of 5: slots in and out of phase)."""
    root = tmp_path_factory.mktemp("served")
    return lerobot_models.checkpoint(
        "act", root / "act", PIXELS, action_dim=4, chunk_size=5, n_action_steps=5
    )


def run(pytester: pytest.Pytester, checkpoint: Path, metrics: str, *extra: str):
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--benchmark-policy=lerobot:{checkpoint}",
        f"--benchmark-task={TASKS}", "--benchmark-episodes=4", "--benchmark-max-steps=12",
        "--benchmark-obs=pixels", f"--benchmark-image-size={SIZE}", "--benchmark-device=cpu",
        "--benchmark-batch-size=2", f"--benchmark-metrics={metrics}", *extra,
    )  # fmt: skip


def records(path: Path) -> dict[str, list]:
    doc = read_metrics(path)
    fields = ("index", "seed", "success", "steps", "sum_reward")
    return {t["id"]: [tuple(e[f] for f in fields) for e in t["episodes"]] for t in doc["results"]}


def server_log(folder: Path) -> str:
    return (folder / "policy-server-0.log").read_text()


@pytest.mark.long
def test_two_workers_share_one_server_and_its_records_are_batched_inferences(
    pytester: pytest.Pytester, act_checkpoint: Path
):
    pytester.makepyfile(test_mw=TESTS)
    # A wait long enough that both workers' requests always meet (the default is 5 ms).
    served = run(pytester, act_checkpoint, "served/m.json", "-n", "2",
                 "--benchmark-policy-server=on", "--benchmark-policy-server-wait=5000")  # fmt: skip
    served.assert_outcomes(passed=2)
    served.stdout.fnmatch_lines(["policy server: cpu (pid *"])
    # Batched inference's records do not depend on the workers: the reference runs in-process.
    evaluate(
        "metaworld", f"lerobot:{act_checkpoint}", tasks=TASKS.split(","), episodes=4,
        max_steps=12, obs="pixels", image_size=SIZE, device="cpu", batch_size=2,
        batched_inference=True, metrics=pytester.path / "batched/m.json",
    )  # fmt: skip
    # The API acts through a server too, when asked (one process: auto would not).
    evaluate(
        "metaworld", f"lerobot:{act_checkpoint}", tasks=TASKS.split(","), episodes=4,
        max_steps=12, obs="pixels", image_size=SIZE, device="cpu", batch_size=2,
        policy_server="on", policy_server_wait=0, metrics=pytester.path / "api/m.json",
    )  # fmt: skip
    assert "gatherings" in server_log(pytester.path / "api")
    # The same episodes; rewards equal up to float rounding, since the server's forward pass
    # holds both workers' slots (a larger matrix product than each worker's own).
    batched_records = records(pytester.path / "batched/m.json")
    for served in ("served", "api"):
        served_records = records(pytester.path / served / "m.json")
        assert served_records.keys() == batched_records.keys()
        for task, episodes in served_records.items():
            assert [e[:4] for e in episodes] == [e[:4] for e in batched_records[task]]
            rewards = [e[4] for e in batched_records[task]]
            assert [e[4] for e in episodes] == pytest.approx(rewards, rel=1e-6)
    api_block = read_metrics(pytester.path / "api/m.json")["run"]
    assert (api_block["policy_server"], api_block["batched_inference"]) == ("on", True)
    run_block = read_metrics(pytester.path / "served/m.json")["run"]
    assert run_block["policy_server"] == "on"
    assert run_block["batched_inference"] is True
    assert read_metrics(pytester.path / "batched/m.json")["run"]["policy_server"] == "off"
    # One model for both workers: the server's log counts its gatherings; the largest held
    # both workers' slots (2 + 2) at once.
    log = server_log(pytester.path / "served")
    assert "largest 4 slots" in log, log


def journaled_episodes(metrics: Path) -> int:
    from pytest_benchmarks.metrics import journal

    folder = journal.folder_for(metrics)
    if not folder.is_dir():
        return 0
    return sum(f.read_text().count('"kind":"episode_finished"') for f in folder.glob("*.jsonl"))


def test_a_server_that_dies_ends_the_waiting_tasks_in_one_line_and_keeps_their_episodes(
    pytester: pytest.Pytester, act_checkpoint: Path
):
    pytester.makepyfile(test_mw=TESTS)
    metrics = pytester.path / "m.json"
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
        f"--benchmark-policy=lerobot:{act_checkpoint}", f"--benchmark-task={TASKS}",
        "--benchmark-episodes=40", "--benchmark-max-steps=20", "--benchmark-obs=pixels",
        f"--benchmark-image-size={SIZE}", "--benchmark-device=cpu", "--benchmark-batch-size=1",
        f"--benchmark-metrics={metrics}", "--benchmark-policy-server=on",
    ]  # fmt: skip
    session = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.PIPE, text=True)
    try:
        first = session.stdout.readline()  # type: ignore[union-attr]
        assert first.startswith("policy server: cpu (pid "), first
        server = int(first.split("pid ")[1].split(",")[0])
        while journaled_episodes(metrics) < 2 and session.poll() is None:
            time.sleep(0.2)
        os.kill(server, signal.SIGKILL)
        out, _ = session.communicate(timeout=300)
    finally:
        session.kill()
    assert session.returncode == 1, out
    doc = read_metrics(metrics)
    errors = [r["error"] for r in doc["results"]]
    assert len(errors) == 2
    for error in errors:
        assert error.startswith(
            f"PolicyServerError: the policy server (pid {server}, cpu) ended: it ended without a "
            "word, as a process killed from outside does (SIGKILL, the out-of-memory killer)"
        ), error
        assert "\n" not in error
    kept = sum(r["n_episodes"] for r in doc["results"])
    assert 2 <= kept < 80
    assert all(e["steps"] > 0 for r in doc["results"] for e in r["episodes"])


# In-process: a server thread and its clients, on a real checkpoint, for faults a real GPU
# would cause (running out of memory) and timing a real session cannot pin down.


class Served:
    """A PolicyServer in a thread of this process, serving ``act_checkpoint``."""

    def __init__(self, folder: Path, tmp_path: Path, actor_type: type | None = None,
                 wait_s: float = 0.005) -> None:  # fmt: skip
        from pytest_benchmarks.core.policy_spec import Loading
        from pytest_benchmarks.policies.endpoint import Endpoint
        from pytest_benchmarks.policies.lerobot import LeRobotPolicy
        from pytest_benchmarks.policies.sources import lerobot_checkpoint
        from pytest_benchmarks.serving.server import PolicyServer

        self.checkpoint = lerobot_checkpoint(str(folder), Loading("cpu"))
        policy, processors = self.checkpoint.load()
        actor = (actor_type or LeRobotPolicy)(
            policy, processors, self.checkpoint.identity, "cpu", 0, batched=True
        )
        address = f"ipc://{tmp_path / 'server.sock'}"
        self.server = PolicyServer(actor, self.checkpoint.identity, address, wait_s=wait_s)
        self.endpoint = Endpoint(address, os.getpid(), "cpu", str(tmp_path / "server.log"))
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            if self.server.socket.poll(50):
                self.server.gather_and_act()
            self.server.drop_ended()

    def client(self, slots: int = 2) -> Any:
        from pytest_benchmarks.policies.served import ServedPolicy

        features = {k: tuple(v) for k, v in self.checkpoint.input_features.items()}
        return ServedPolicy(self.endpoint, self.checkpoint.identity, features, slots)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.server.close()


def batch(slots: int = 2) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    return {
        "observation.state": rng.normal(size=(slots, 39)).astype(np.float32),
        "observation.images.corner2": rng.integers(0, 256, (slots, SIZE, SIZE, 3), np.uint8),
        "task": ["reach the goal"] * slots,
    }


def test_a_failed_forward_pass_is_one_line_to_each_waiting_worker_and_the_server_goes_on(
    act_checkpoint: Path, tmp_path: Path
):
    import torch

    from pytest_benchmarks.policies.endpoint import PolicyServerError
    from pytest_benchmarks.policies.lerobot import LeRobotPolicy

    class RunsOutOfMemoryOnce(LeRobotPolicy):
        failed = False

        def act_on(self, observations: dict) -> dict:
            if not RunsOutOfMemoryOnce.failed:
                RunsOutOfMemoryOnce.failed = True
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return super().act_on(observations)

    served = Served(act_checkpoint, tmp_path, RunsOutOfMemoryOnce)
    try:
        policy = served.client()
        policy.reset([0, 1], [1, 2])
        with pytest.raises(PolicyServerError) as failed:
            policy.act(batch())
        assert str(failed.value) == (
            "the policy server's policy failed: OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 2.00 GiB"
        )
        policy.reset([0, 1], [1, 2])
        actions = policy.act(batch())
        assert actions.shape == (2, 4) and np.isfinite(actions).all()
    finally:
        served.stop()


def test_a_worker_that_ended_never_holds_up_the_others(act_checkpoint: Path, tmp_path: Path):
    from pytest_benchmarks.engine.deadline import time_limit

    # A server that waits (up to an hour) for every active worker's request before it acts.
    served = Served(act_checkpoint, tmp_path, wait_s=3600)
    try:
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        ended = served.client()
        live = served.client()
        ended_id = next(who for who, c in served.server.clients.items() if c.pid == os.getpid())
        served.server.clients[ended_id].pid = gone.pid  # its process has ended
        live.reset([0, 1], [1, 2])
        with time_limit(120, "the live worker's step"):  # a hang detector, not a speed bound
            actions = live.act(batch())
        assert actions.shape == (2, 4)
        assert ended_id not in served.server.clients
        del ended
    finally:
        served.stop()


def test_the_task_timeout_covers_the_wait_on_a_server_that_hangs(
    act_checkpoint: Path, tmp_path: Path
):
    import zmq

    from pytest_benchmarks.engine.deadline import TaskTimeout, time_limit

    served = Served(act_checkpoint, tmp_path)
    policy = served.client()
    served.stop()  # the server's socket stays open, and nothing answers it any more
    hung = zmq.Context.instance().socket(zmq.ROUTER)
    hung.bind(policy.endpoint.address.replace("server.sock", "hung.sock"))
    try:
        policy._socket.disconnect(policy.endpoint.address)
        policy._socket.connect(policy.endpoint.address.replace("server.sock", "hung.sock"))
        policy.reset([0, 1], [1, 2])
        with pytest.raises(TaskTimeout), time_limit(1, "reach-v3"):
            policy.act(batch())
    finally:
        hung.close(0)


def test_auto_serves_a_lerobot_policy_on_a_gpu_under_xdist_and_spreads_workers_over_gpus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    import torch

    from pytest_benchmarks.core.validation import build
    from pytest_benchmarks.core.values import OptionError
    from pytest_benchmarks.serving import launch

    settings = build(root=tmp_path, policy=f"lerobot:{tmp_path}", device="cpu")
    assert launch.resolve(settings, workers=2).policy_server == "off"  # a CPU: off
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    on_gpu = build(root=tmp_path, policy=f"lerobot:{tmp_path}", device="auto")
    served = launch.resolve(on_gpu, workers=2)
    assert (served.policy_server, served.batched_inference) == ("on", True)
    assert launch.resolve(on_gpu, workers=0).policy_server == "off"  # one process: nothing to share
    assert launch.devices("auto") == ["cuda:0", "cuda:1", "cuda:2"]
    servers = launch.PolicyServers(served)
    servers.endpoints = [launch.Endpoint(f"ipc://{i}", i, f"cuda:{i}", "log") for i in range(3)]
    assert [servers.for_worker(n).device for n in range(5)] == [
        "cuda:0", "cuda:1", "cuda:2", "cuda:0", "cuda:1"
    ]  # fmt: skip
    servers.stop()
    scripted = build(root=tmp_path, policy="scripted", device="auto")
    assert launch.resolve(scripted, workers=2).policy_server == "off"
    with pytest.raises(OptionError, match=r"^--benchmark-policy-server=on: only lerobot: policies"):
        build(root=tmp_path, policy="scripted", policy_server="on")
