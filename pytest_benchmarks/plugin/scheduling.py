"""xdist scheduling that keeps every test of a task on one worker.

A task's episodes run once per session and every test of the task reads that result, so its
tests must share a worker. This is xdist's LoadScopeScheduling with the scope taken from the
task id in the test id (``test_x[metaworld/push-v3]`` -> ``metaworld/push-v3``); tests without
a task keep one scope each, as under plain ``--dist load``.

Two methods are overridden, as xdist's ``LoadGroupScheduling`` overrides ``_split_scope``:
``_split_scope`` (the intended override point: what a scope is) and ``remove_node`` (what
happens to a crashed worker's work). The latter reads ``workqueue`` and ``assigned_work``, which
LoadScopeScheduling documents, and calls its ``_reschedule``; the ``test`` extra bounds
pytest-xdist below 4 for that reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from pytest_benchmarks.plugin.nodeids import task_of_nodeid


class TaskScheduling(LoadScopeScheduling):
    """Load scheduling with one work unit per benchmark task."""

    def __init__(self, config: pytest.Config, log: Any, task_ids: Iterable[str]) -> None:
        super().__init__(config, log)
        self._task_ids = list(task_ids)
        #: Per crashing test: the other tests of its task, dropped instead of requeued.
        self.dropped: dict[str, list[str]] = {}

    def _split_scope(self, nodeid: str) -> str:
        return task_of_nodeid(nodeid, self._task_ids) or nodeid

    def remove_node(self, node: Any) -> str | None:
        """Requeue a crashed worker's unfinished tests, except those of the task that crashed it.

        The crashed task's other tests would run its episodes again and crash the next worker;
        they are dropped and listed in ``dropped`` for the controller to fail with one line.
        LoadScopeScheduling requeues the crashed worker's whole workload: the crashing test would
        kill worker after worker, and a unit whose tests all finished would be handed to the
        replacement worker as an empty batch, after which nothing schedules again and the
        session hangs.
        """
        crashitem = super().remove_node(node)
        if crashitem is None:
            return None
        unit = self.workqueue.get(self._split_scope(crashitem))
        if unit is not None:
            unit[crashitem] = True
            if task_of_nodeid(crashitem, self._task_ids):
                # The task's other tests would run its episodes again and crash the next worker.
                self.dropped[crashitem] = [nodeid for nodeid, done in unit.items() if not done]
                unit.update(dict.fromkeys(unit, True))
        for scope in [scope for scope, unit in self.workqueue.items() if all(unit.values())]:
            del self.workqueue[scope]
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem
