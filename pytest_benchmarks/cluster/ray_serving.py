"""A served policy on Ray: one policy server per device per node, shared by every task that runs
on the node, as the xdist workers of one machine share theirs (``serving``).

The first task on a node creates the node's ``NodeServers`` actor (named after the node, in
the session's namespace, pinned to the node, detached so that it outlives the task that made
it); the actor starts the node's servers (``serving.launch.PolicyServers``, logs named after the
node) and hands each task an endpoint, the tasks spread over the devices. The session stops
every node's servers at its end (``stop_all``); a node that dies takes its servers with it.
"""

from __future__ import annotations

from typing import Any

from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.serving.launch import PolicyServers

PREFIX = "policy-servers-"


class NodeServers:
    """The policy servers of one node (a Ray actor there)."""

    def __init__(self, settings: Settings, node: str) -> None:
        self.servers = PolicyServers(settings, label=f"{node[:8]}-")
        self.started = False
        self.handed = 0

    def endpoint(self) -> tuple[str, str | None]:
        """An endpoint for one more task; with the line that says the servers started, the
        first time."""
        line = None
        if not self.started:
            self.started = True
            found = self.servers.start()
            line = ", ".join(f"{e.device} (pid {e.pid}, log {e.log})" for e in found)
        endpoints = self.servers.endpoints
        chosen = endpoints[self.handed % len(endpoints)]
        self.handed += 1
        return chosen.text(), line

    def stop(self) -> None:
        self.servers.stop()


def endpoint_for(settings: Settings, node: str) -> tuple[str, str | None]:
    """This node's policy server for a task (started by the node's first task)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor: Any = (
        ray.remote(NodeServers)
        .options(
            name=f"{PREFIX}{node}",
            get_if_exists=True,
            lifetime="detached",
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        )
        .remote(settings, node)
    )
    text, line = ray.get(actor.endpoint.remote())
    return text, None if line is None else f"policy server on node {node[:8]}: {line}"


def stop_all() -> None:
    """End every node's servers of this session (its namespace), and their actors."""
    import ray

    for name in ray.util.list_named_actors():
        if not str(name).startswith(PREFIX):
            continue
        try:
            actor = ray.get_actor(name)
            ray.get(actor.stop.remote(), timeout=30)
            ray.kill(actor)
        except (ray.exceptions.RayError, ValueError):
            continue  # its node is gone, and its servers with it
