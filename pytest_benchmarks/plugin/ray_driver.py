"""``--benchmark-ray``: the session drives a Ray cluster instead of running tasks itself.

Registered in the controller when the option is given: it joins the cluster before collection
(a refusal is one line, before any episode), hands every collected task to it once collection
ends, so the cluster runs them side by side, and leaves the cluster at the end. The tests wait
for their task's row through the ``evaluate`` fixture (``cluster.ray_pool.RayPool.run_task``).
"""

from __future__ import annotations

import pytest

from pytest_benchmarks.cluster.ray_pool import RayPool
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.core.values import OptionError
from pytest_benchmarks.plugin import signals
from pytest_benchmarks.plugin.assertion import stopping_rule
from pytest_benchmarks.plugin.session import SessionState
from pytest_benchmarks.plugin.snapshot_extension import benchmark_param


class RayDriver:
    """The controller's link to the cluster (``state.remote``)."""

    def __init__(self, config: pytest.Config, state: SessionState) -> None:
        self.config = config
        self.state = state

    @classmethod
    def join(cls, config: pytest.Config, state: SessionState) -> RayDriver:
        """Join the cluster the option names, or end the session with one line."""
        settings = state.settings
        assert settings.ray is not None
        workers = int(getattr(config.option, "numprocesses", 0) or 0)
        if workers:
            raise pytest.UsageError(
                f"--benchmark-ray: the tasks run on the Ray cluster and this session is their "
                f"controller; drop -n {workers}"
            )
        driver = cls(config, state)
        envs = [name for name, tasks in state.selection.items() if tasks]
        try:
            state.remote = RayPool.open(settings, state.engine.journal, driver.show, envs)
        except OptionError as exc:
            raise pytest.UsageError(str(exc)) from None
        return driver

    def show(self, line: str) -> None:
        controller = self.config.pluginmanager.get_plugin("benchmarks-controller")
        if controller is not None:
            controller.show(line)

    def pytest_report_header(self) -> list[str]:
        """The cluster, and what a task steps there (the header's ``batch size auto`` is one env
        per task on Ray, unless --benchmark-batch-size says more)."""
        import ray

        nodes = [n for n in ray.nodes() if n.get("Alive")]
        cpus = sum(n["Resources"].get("CPU", 0) for n in nodes)
        gpus = sum(n["Resources"].get("GPU", 0) for n in nodes)
        assert self.state.remote is not None  # joined in ``join``
        envs = self.state.remote.on_node.batch_size
        return [
            f"ray: {self.state.settings.ray}, {len(nodes)} nodes, {cpus:g} CPUs, {gpus:g} GPUs; "
            f"each task steps {envs} env{'s' if envs != 1 else ''} on one node"
        ]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Every task a collected test evaluates goes to the cluster now, in test order."""
        pool = self.state.remote
        assert pool is not None
        for item in session.items:
            task = benchmark_param(item)
            if not isinstance(task, TaskRef) or "evaluate" not in getattr(item, "fixturenames", ()):
                continue
            if task.id in self.state.cache or item.get_closest_marker("skip") is not None:
                continue  # finished in a resumed file, or not run at all
            pool.submit(task, self.state.resumed.get(task.id), stopping_rule(item, task))

    def pytest_keyboard_interrupt(self) -> None:
        """Before the session writes what it has: the episodes the nodes sent, then stop them."""
        if self.state.remote is not None:
            self.state.remote.stop(signals.stopped_by())

    def pytest_unconfigure(self) -> None:
        if self.state.remote is not None:
            self.state.remote.close()
            self.state.remote = None
