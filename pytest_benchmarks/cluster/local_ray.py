"""A Ray cluster of its own on one machine, to try ``--benchmark-ray`` and to test it: a head
that runs no task and worker nodes with the CPUs given, each a separate ``ray start`` with its
own raylet, on free ports and under a private ``RAY_TMPDIR``, so that killing one node's raylet
is a node lost. Stopped by ending the processes it started, never ``ray stop`` (which ends
every Ray process of the machine, another cluster's too)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pytest_benchmarks.cluster.local_slurm import free_port

#: How long one ``ray start`` may take.
START_S = 120.0
#: Each node's object store: the tasks return rows of episodes, and Ray's default (30% of the
#: memory per node) is a file in /tmp where /dev/shm is small, as in many containers.
OBJECT_STORE_BYTES = 128 * 1024**2
#: Where every node of the cluster listens: a loopback address, never the host's others. Not
#: 127.0.0.1, which Ray replaces by the host's reachable address when a cluster starts.
LOOPBACK = "127.0.0.2"


def unavailable() -> str | None:
    """Why no cluster can start here, or None."""
    if _ray_command() is None:
        return "the ray command is not installed (pip install 'pytest-benchmarks[ray]')"
    return None


def _ray_command() -> str | None:
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else shutil.which("ray")


@dataclass
class LocalRay:
    """A running cluster: its head's address and the environment that names it."""

    address: str
    #: ``RAY_TMPDIR`` and ``RAY_ADDRESS`` for the processes that join it.
    env: dict[str, str]
    temp: Path
    #: Each node's ``ray start`` log.
    logs: list[Path] = field(default_factory=list)
    #: The ``ray`` command and the nodes' environment, for nodes added later.
    command: str = "ray"
    environment: dict[str, str] = field(default_factory=dict)

    def add_node(self, cpus: int = 1) -> None:
        """Start one more worker node of ``cpus`` CPUs (after one was lost, say)."""
        node = [
            f"--address={self.address}", f"--num-cpus={cpus}", "--num-gpus=0",
            f"--node-ip-address={LOOPBACK}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
        ]  # fmt: skip
        self.logs.append(self.temp / f"node-{len(self.logs)}.log")
        _start(self.command, node, self.environment, self.logs[-1])

    def processes(self) -> list[psutil.Process]:
        """Every process of the cluster: those that name its folder or its head's address
        (Ray Client's server does), and their children."""
        found: dict[int, psutil.Process] = {}
        port = self.address.rpartition(":")[2]
        for process in psutil.process_iter(["cmdline"]):
            with contextlib.suppress(psutil.Error):
                parts = process.info["cmdline"] or ()
                if any(
                    str(self.temp) in part
                    or (part.startswith("--address=") and part.endswith(f":{port}"))
                    for part in parts
                ):
                    found[process.pid] = process
                    for child in process.children(recursive=True):
                        found[child.pid] = child
        found.pop(os.getpid(), None)
        return list(found.values())

    def raylets(self) -> list[psutil.Process]:
        return [p for p in self.processes() if _name(p) == "raylet"]

    def kill_node(self, raylet: psutil.Process) -> None:
        """A node lost: its raylet and every process under it, killed at once."""
        _kill([raylet, *raylet.children(recursive=True)])

    def stop(self) -> None:
        """End every process of the cluster (SIGKILL: a Ray node holds nothing to save)."""
        _kill(self.processes())


def _kill(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(processes, timeout=30)


def _name(process: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return process.name()
    return ""


def _start(ray: str, args: list[str], env: dict[str, str], log: Path) -> None:
    with log.open("w") as out:
        subprocess.run(
            [ray, "start", "--disable-usage-stats", *args],
            env=env, stdout=out, stderr=subprocess.STDOUT, timeout=START_S, check=True,
        )  # fmt: skip


@contextmanager
def cluster(nodes: int = 2, cpus: int = 1, env: dict[str, str] | None = None) -> Iterator[LocalRay]:
    """A head with no CPUs for tasks and ``nodes`` worker nodes of ``cpus`` CPUs each; ``env``
    (default: this process's) is the nodes' environment, which their Ray workers inherit."""
    ray = _ray_command()
    if ray is None:
        raise RuntimeError(unavailable())
    # Short: Ray's unix sockets live under it (at most 107 characters in a socket's path).
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    port = free_port()
    address = f"{LOOPBACK}:{port}"
    names = {"RAY_TMPDIR": str(temp), "RAY_ADDRESS": address}
    environment = {**(env if env is not None else os.environ), **names}
    running = LocalRay(address, names, temp, command=ray, environment=environment)
    try:
        head = [
            "--head", f"--port={port}", "--num-cpus=0", "--num-gpus=0",
            f"--node-ip-address={LOOPBACK}",
            "--include-dashboard=false", f"--dashboard-port={free_port()}",
            f"--ray-client-server-port={free_port()}", f"--temp-dir={temp}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
        ]  # fmt: skip
        running.logs.append(temp / "head.log")
        _start(ray, head, environment, running.logs[-1])
        for _ in range(nodes):
            running.add_node(cpus)
        yield running
    finally:
        running.stop()
        shutil.rmtree(temp, ignore_errors=True)
