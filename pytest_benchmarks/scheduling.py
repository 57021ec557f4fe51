"""xdist scheduling that keeps every test of a task on one worker.

A task's episodes run once per session and every test of the task reads that result, so its
tests must share a worker. This is xdist's LoadScopeScheduling with the scope taken from the
task id in the test id (``test_x[metaworld/push-v3]`` -> ``metaworld/push-v3``); tests without
a task keep one scope each, as under plain ``--dist load``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling


class TaskScheduling(LoadScopeScheduling):
    """Load scheduling with one work unit per benchmark task."""

    def __init__(self, config: pytest.Config, log: Any, task_ids: Iterable[str]) -> None:
        super().__init__(config, log)
        # Longest first: in test_x[a/x-y], task a/x-y must win over task a/x followed by "-".
        self._task_ids = sorted(task_ids, key=len, reverse=True)

    def _split_scope(self, nodeid: str) -> str:
        params = nodeid[nodeid.find("[") :] if nodeid.endswith("]") else ""
        for task_id in self._task_ids:
            for left in "[-":
                for right in "]-":
                    if f"{left}{task_id}{right}" in params:
                        return task_id
        return nodeid

    def remove_node(self, node: Any) -> str | None:
        """Requeue a crashed worker's unfinished tests, but not the one that crashed it.

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
        for scope in [scope for scope, unit in self.workqueue.items() if all(unit.values())]:
            del self.workqueue[scope]
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem
