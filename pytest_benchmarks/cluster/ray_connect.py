"""Joining the Ray cluster ``--benchmark-ray`` names, and what each task asks of it.

Everything that can be known before an episode runs is refused here in one line: Ray not
installed, no cluster at the address, a cluster without what a task needs (a GPU for
``--benchmark-device=cuda``, a node with as many CPUs as the task steps envs).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.values import OptionError
from pytest_benchmarks.engine.vector import slots_for

FLAG = "--benchmark-ray"
#: How long an address may take to answer before it is called unreachable.
CONNECT_S = 5.0
#: How long joining a cluster may take: past it, what answers is no Ray cluster's head.
JOIN_S = 15.0


def needs(settings: Settings) -> dict[str, Any]:
    """What one task asks of a node: a CPU per env it steps together (one env per task unless
    --benchmark-batch-size says more), and a GPU for a policy on cuda."""
    cpus = slots_for(settings)
    return {"num_cpus": cpus, "num_gpus": 1 if settings.device == "cuda" else 0}


def answers(address: str) -> str | None:
    """Why nothing answers at HOST:PORT (checked by the option), or None when something does."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_S):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def connect(address: str, settings: Settings) -> None:
    """Join the cluster at ``address`` (``auto``: the one ``RAY_ADDRESS`` or a local
    ``ray start`` names) as its driver, and check it can run the session's tasks."""
    try:
        import ray
    except ImportError:
        raise OptionError(f"{FLAG} needs Ray: pip install 'pytest-benchmarks[ray]'") from None
    named = os.environ.get("RAY_ADDRESS", "") if address == "auto" else address
    if named and named != "auto" and ":" in named:
        why = answers(named.removeprefix("ray://"))
        if why is not None:
            where = address if address != "auto" else f"auto (RAY_ADDRESS={named})"
            raise OptionError(
                f"{FLAG}={where}: no Ray cluster answers there ({why}); start its head with "
                "`ray start --head --port=PORT`, or give auto for the one RAY_ADDRESS names"
            )
    _join(ray, address)
    try:
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
        _check_resources(address, settings, nodes)
    except OptionError:
        ray.shutdown()
        raise


def _join(ray: Any, address: str) -> None:
    """``ray.init`` within ``JOIN_S``: Ray retries a listener that is not its head for minutes,
    so the join runs in a thread of its own and a join that has not ended by then is refused
    in one line (the session ends; the thread with it)."""
    failed: list[BaseException] = []

    def join() -> None:
        try:
            ray.init(
                address=address,
                log_to_driver=False,
                logging_level=logging.WARNING,
                configure_logging=False,
                namespace=f"pytest-benchmarks-{os.getpid()}",
            )
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=join, name="ray-join", daemon=True)
    thread.start()
    thread.join(JOIN_S)
    if thread.is_alive():
        raise OptionError(
            f"{FLAG}={address}: no Ray cluster answered within {JOIN_S:g} s (is it a Ray head's "
            "GCS port? `ray status` on the head names it)"
        )
    if failed:
        text = str(failed[0]).strip().splitlines() or [type(failed[0]).__name__]
        raise OptionError(f"{FLAG}={address}: cannot join a Ray cluster: {text[0][:200]}")


def _check_resources(address: str, settings: Settings, nodes: list[dict[str, float]]) -> None:
    """Some node has what one task asks (``needs``)."""
    asked = needs(settings)
    gpus = sum(node.get("GPU", 0) for node in nodes)
    largest = max((node.get("CPU", 0) for node in nodes), default=0)
    have = f"{len(nodes)} nodes, at most {largest:g} CPUs each, {gpus:g} GPUs"
    if asked["num_gpus"] and not gpus:
        raise OptionError(
            f"--benchmark-device=cuda: the Ray cluster at {address} has no GPU ({have});"
            " use --benchmark-device=cpu, or add a node with a GPU"
        )
    if largest < asked["num_cpus"]:
        raise OptionError(
            f"{FLAG}={address}: a task steps {asked['num_cpus']} envs and needs as many CPUs on "
            f"one node, the cluster has {have}; lower --benchmark-batch-size"
        )
