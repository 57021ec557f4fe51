"""Several slots' batch-of-one values (observations, LeRobot episode state) merged into one
batch, and split back.

A LeRobot policy's episode state is a tree of deques, dicts, lists and tensors whose first
dimension is the batch. Slots whose trees have the same shape (the same queue lengths: episodes
at the same phase of their action chunk) take the same path through ``select_action``, so one
call on their merged trees does what one call per slot does. A tree holding anything else (a
temporal ensembler, a batch-wide counter) cannot be merged: its slots act one by one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import torch

#: Leaves that are not per-sample: merged only when every slot holds the same value.
SCALARS = (type(None), bool, int, float, str)


class Unmergeable(ValueError):
    """Slot values that cannot share one batch."""


def phase(value: Any) -> tuple[Any, ...] | None:
    """The shape of a slot's tree (queue lengths, keys, tensor shapes); slots of equal phase
    merge. None where the tree holds something that cannot be merged."""
    if isinstance(value, torch.Tensor):
        return ("t", tuple(value.shape), value.dtype) if value.shape[:1] == (1,) else None
    if isinstance(value, deque):
        parts = [phase(v) for v in value]
        return None if None in parts else ("q", value.maxlen, *parts)
    if isinstance(value, dict):
        parts = [phase(v) for v in value.values()]
        return None if None in parts else ("d", *value.keys(), *parts)
    if isinstance(value, list):
        return ("l",) if len(value) == 1 and isinstance(value[0], str) else None
    if isinstance(value, SCALARS):
        return ("s", value)
    return None


def merge(values: Sequence[Any]) -> Any:
    """One batch from batch-of-one values of equal phase (tensors concatenated on dim 0)."""
    first = values[0]
    if isinstance(first, torch.Tensor):
        if any(v.shape != first.shape or v.shape[:1] != (1,) for v in values):
            raise Unmergeable(f"tensors of shapes {[tuple(v.shape) for v in values]}")
        return torch.cat(list(values))
    if isinstance(first, deque):
        if any(len(v) != len(first) for v in values):
            raise Unmergeable("queues of different lengths")
        return deque((merge(items) for items in zip(*values, strict=True)), first.maxlen)
    if isinstance(first, dict):
        if any(v.keys() != first.keys() for v in values):
            raise Unmergeable("dicts of different keys")
        return {k: merge([v[k] for v in values]) for k in first}
    if isinstance(first, list):
        if any(len(v) != 1 for v in values):
            raise Unmergeable("lists that are not one sample long")
        return [v[0] for v in values]
    if isinstance(first, SCALARS) and all(v == first for v in values):
        return first
    raise Unmergeable(f"cannot batch {type(first).__name__}")


def split(value: Any, count: int) -> list[Any]:
    """``merge``'s inverse: the batch's ``count`` samples, each a batch of one."""
    if isinstance(value, torch.Tensor):
        if value.shape[:1] != (count,):
            raise Unmergeable(f"a tensor of shape {tuple(value.shape)} in a batch of {count}")
        return [value[i : i + 1] for i in range(count)]
    if isinstance(value, deque):
        columns = [split(v, count) for v in value]
        return [deque((c[i] for c in columns), value.maxlen) for i in range(count)]
    if isinstance(value, dict):
        fields = {k: split(v, count) for k, v in value.items()}
        return [{k: c[i] for k, c in fields.items()} for i in range(count)]
    if isinstance(value, list) and len(value) == count:
        return [[v] for v in value]
    if isinstance(value, SCALARS):
        return [value] * count
    raise Unmergeable(f"cannot split {type(value).__name__}")


def groups(phases: Sequence[Any]) -> list[list[int]]:
    """Slot indices grouped by equal phase, in slot order; an unmergeable slot (phase None)
    is a group of its own."""
    found: dict[Any, list[int]] = {}
    alone: list[list[int]] = []
    for slot, key in enumerate(phases):
        if key is None:
            alone.append([slot])
        else:
            found.setdefault(key, []).append(slot)
    return sorted([*found.values(), *alone])
