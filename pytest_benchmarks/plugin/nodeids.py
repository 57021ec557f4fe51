"""Which task a test id belongs to, from its parameters (the scheduler's and the controller's)."""

from __future__ import annotations

from collections.abc import Iterable


def task_of_nodeid(nodeid: str, task_ids: Iterable[str]) -> str | None:
    """The task id in a test id's parameters (``test_x[metaworld/push-v3]``), or None."""
    params = nodeid[nodeid.find("[") :] if nodeid.endswith("]") else ""
    # Longest first: in test_x[a/x-y], task a/x-y must win over task a/x followed by "-".
    for task_id in sorted(task_ids, key=len, reverse=True):
        for left in "[-":
            for right in "]-":
                if f"{left}{task_id}{right}" in params:
                    return task_id
    return None
