"""Joining the Ray cluster ``--benchmark-ray`` names, and what each task asks of it.

Everything that can be known before an episode runs is refused here in one line: Ray not
installed, no cluster at the address, a cluster without what a task needs (a GPU for
``--benchmark-device=cuda``, a node with as many CPUs as the task steps envs).
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.values import OptionError

FLAG = "--benchmark-ray"
#: How long an address may take to answer before it is called unreachable.
CONNECT_S = 5.0


def needs(settings: Settings) -> dict[str, Any]:
    """What one task asks of a node: a CPU per env it steps together (one env per task unless
    --benchmark-batch-size says more), and a GPU for a policy on cuda."""
    cpus = min(settings.batch_size or 1, settings.planned)
    return {"num_cpus": cpus, "num_gpus": 1 if settings.device == "cuda" else 0}


def _answers(address: str) -> str | None:
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
    if address != "auto":
        why = _answers(address)
        if why is not None:
            raise OptionError(
                f"{FLAG}={address}: no Ray cluster answers there ({why}); start its head with "
                "`ray start --head --port=PORT`, or give auto for the one RAY_ADDRESS names"
            )
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=False,
            namespace=f"pytest-benchmarks-{os.getpid()}",
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        text = str(exc).strip().splitlines()
        raise OptionError(f"{FLAG}={address}: cannot join a Ray cluster: {text[0]}") from None
    try:
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
        _check_resources(address, settings, nodes)
    except OptionError:
        ray.shutdown()
        raise


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
