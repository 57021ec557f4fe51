"""Starting the policy servers of a run: one per device, before the xdist workers start, and
each worker handed the one it uses (workers spread evenly over the devices)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.policies.endpoint import Endpoint
from pytest_benchmarks.policies.hub import resolve_device

#: How long a stopping server has after SIGTERM before it is killed.
STOP_S = 10.0


def resolve(settings: Settings, workers: int) -> Settings:
    """The run's settings with ``policy_server`` decided (on or off): auto is on for a lerobot:
    policy on a CUDA device under xdist or on Ray (a server per node, ``cluster.ray_serving``).
    A served run is a batched one (the same rules, and the gate refuses batch-of-one snapshots
    for it), so ``batched_inference`` is set with it."""
    mode = settings.policy_server
    if mode == "auto":
        cuda = settings.policy.is_lerobot and _cuda(settings)
        mode = "on" if cuda and (workers > 0 or settings.ray is not None) else "off"
    served = mode == "on"
    return dataclasses.replace(
        settings, policy_server=mode, batched_inference=settings.batched_inference or served
    )


def _cuda(settings: Settings) -> bool:
    """The run's policies act on a GPU: asked for on Ray (the nodes' devices decide, not this
    machine's), resolved here otherwise (torch is imported only for a learned policy)."""
    if settings.ray is not None:
        return settings.device == "cuda"
    return resolve_device(settings.device).startswith("cuda")


def devices(device: str) -> list[str]:
    """One server per device: every visible GPU for ``cuda`` (or ``auto`` on a GPU machine)."""
    resolved = resolve_device(device)
    if resolved != "cuda":
        return [resolved]
    import torch

    return [f"cuda:{i}" for i in range(max(1, torch.cuda.device_count()))]


class PolicyServers:
    """The run's policy server processes; ``stop`` ends them (also when never started)."""

    def __init__(self, settings: Settings, label: str = "") -> None:
        self.settings = settings
        #: Told apart in the logs' names: ``policy-server-LABEL0.log`` (a Ray node's).
        self.label = label
        self.folder = Path(tempfile.mkdtemp(prefix="pytest-benchmarks-server-"))
        self.processes: list[subprocess.Popen[bytes]] = []
        self.endpoints: list[Endpoint] = []

    def start(self) -> list[Endpoint]:
        """Start one server per device; they load the policy while the workers start."""
        settings = self.settings
        logs = settings.metrics.parent
        logs.mkdir(parents=True, exist_ok=True)
        for i, device in enumerate(devices(settings.device)):
            address = f"ipc://{self.folder / f'{i}.sock'}"
            log = logs / f"policy-server-{self.label}{i}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [sys.executable, "-m", "pytest_benchmarks.serving.server",
                     "--address", address, "--policy", str(settings.policy),
                     "--device", device, "--rename-map", json.dumps(dict(settings.rename_map)),
                     "--wait-ms", str(settings.policy_server_wait)],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                )  # fmt: skip
            self.processes.append(process)
            self.endpoints.append(Endpoint(address, process.pid, device, str(log)))
        return self.endpoints

    def for_worker(self, index: int) -> Endpoint:
        """Worker ``index``'s server: workers spread round-robin over the devices."""
        return self.endpoints[index % len(self.endpoints)]

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(STOP_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []
        shutil.rmtree(self.folder, ignore_errors=True)
