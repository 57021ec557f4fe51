"""A worker's batch of observations in shared memory: images travel to the policy server by
one copy into a block both processes map, never pickled through a socket.

The batch's arrays (nested dicts of them too, as LIBERO's ``robot_state``) are laid out once,
by key path, shape and dtype; everything else (the task strings) rides in the message.
"""

from __future__ import annotations

import _posixshmem
import contextlib
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

#: One array's place in the block: key path, shape, dtype string, byte offset.
Slot = tuple[tuple[str, ...], tuple[int, ...], str, int]


def flatten(batch: dict[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """The batch's leaves by key path."""
    leaves: dict[tuple[str, ...], Any] = {}
    for key, value in batch.items():
        if isinstance(value, dict):
            leaves.update(flatten(value, (*prefix, key)))
        else:
            leaves[(*prefix, key)] = value
    return leaves


def nest(leaves: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    """``flatten``'s inverse."""
    batch: dict[str, Any] = {}
    for path, value in leaves.items():
        node = batch
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return batch


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


@dataclass
class Layout:
    """Where each array of a batch lies in a shared block."""

    name: str
    slots: list[Slot]
    size: int

    @classmethod
    def of(cls, name: str, leaves: dict[tuple[str, ...], Any]) -> Layout:
        slots, offset = [], 0
        for path, value in leaves.items():
            if is_array(value):
                slots.append((path, tuple(value.shape), value.dtype.str, offset))
                offset += -(-value.nbytes // 64) * 64  # each array 64-byte aligned
        return cls(name, slots, max(offset, 1))

    def fits(self, leaves: dict[tuple[str, ...], Any]) -> bool:
        arrays = {p: v for p, v in leaves.items() if is_array(v)}
        return len(arrays) == len(self.slots) and all(
            path in arrays and arrays[path].shape == shape and arrays[path].dtype.str == dtype
            for path, shape, dtype, _ in self.slots
        )

    def views(self, buffer: memoryview | None) -> dict[tuple[str, ...], np.ndarray]:
        assert buffer is not None, "a closed block"
        return {
            path: np.ndarray(shape, np.dtype(dtype), buffer, offset)
            for path, shape, dtype, offset in self.slots
        }


class Outbox:
    """The worker's side: a block sized for its batch, rewritten in place every step."""

    def __init__(self) -> None:
        self.block: shared_memory.SharedMemory | None = None
        self.layout: Layout | None = None

    def write(self, batch: dict[str, Any]) -> tuple[Layout | None, dict[tuple[str, ...], Any]]:
        """Copy the batch's arrays into the block; the new layout (None if unchanged) and the
        leaves that travel in the message."""
        leaves = flatten(batch)
        new = None
        if self.layout is None or not self.layout.fits(leaves):
            self.close()
            size = Layout.of("", leaves).size
            self.block = shared_memory.SharedMemory(create=True, size=size)
            untrack(self.block)
            self.layout = new = Layout.of(self.block.name, leaves)
        assert self.block is not None
        for path, view in self.layout.views(self.block.buf).items():
            view[...] = leaves[path]
        return new, {p: v for p, v in leaves.items() if not is_array(v)}

    def close(self) -> None:
        if self.block is not None:
            self.block.close()
            unlink(self.block)
            self.block = None
            self.layout = None


class Inbox:
    """The server's side: a worker's block mapped; each step's arrays copied out, so nothing
    the policy keeps (an observation queue) changes when the worker writes the next step."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.block = shared_memory.SharedMemory(name=layout.name)
        untrack(self.block)
        self.arrays = layout.views(self.block.buf)

    def batch(self, rest: dict[tuple[str, ...], Any]) -> dict[str, Any]:
        return nest({**{p: v.copy() for p, v in self.arrays.items()}, **rest})

    def close(self, unlink_block: bool = False) -> None:
        """Unmap the block; ``unlink_block`` also removes it (its worker ended without)."""
        self.arrays = {}
        # A view still held keeps the mapping: it goes with the process.
        with contextlib.suppress(BufferError):
            self.block.close()
        if unlink_block:
            with contextlib.suppress(FileNotFoundError):
                unlink(self.block)


def untrack(block: shared_memory.SharedMemory) -> None:
    """Keep the block out of multiprocessing's resource tracker: the harness ends the processes
    a task leaves running, the tracker among them, and a tracker started anew would fail on
    the block's unlink. Its owner unlinks it (``unlink``); the server does for a worker that
    ended without."""
    resource_tracker.unregister(block._name, "shared_memory")  # type: ignore[attr-defined]


def unlink(block: shared_memory.SharedMemory) -> None:
    """Remove an untracked block (``SharedMemory.unlink`` would tell the tracker, and start a
    new one where the harness ended it)."""
    _posixshmem.shm_unlink(block._name)  # type: ignore[attr-defined]
