"""A worker's side of the policy server: a Policy whose actions come from the server.

The worker checks the checkpoint against its env's features itself (the config only, no
weights), so a mismatch is the task's one-line error as without a server. Each step writes the
batch into shared memory and sends one request, carrying the slots that started an episode
since the last one; the actions come back unclipped and are clipped to the action space here,
as ``policies.lerobot`` does. While it waits the worker checks that the server still runs, and
``--benchmark-timeout`` interrupts the wait like any other part of the task.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import zmq

from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.policy_spec import Loading
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.policies.endpoint import Endpoint, PolicyServerError
from pytest_benchmarks.policies.hub import PolicySourceError
from pytest_benchmarks.policies.lerobot import LeRobotLoadError
from pytest_benchmarks.policies.shared_batch import Outbox
from pytest_benchmarks.policies.sources import lerobot_checkpoint

#: How often a waiting worker looks whether the server still runs.
POLL_S = 0.2


class ServedPolicy:
    """A lerobot: policy acting through a policy server."""

    def __init__(
        self,
        endpoint: Endpoint,
        identity: dict[str, str | None],
        input_features: dict[str, tuple[int, ...]],
        num_envs: int,
        pad: Sequence[tuple[str, tuple[int, ...]]] = (),
        bounds: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.endpoint, self._identity, self.num_envs = endpoint, identity, num_envs
        self.input_features = input_features
        self.bounds = bounds
        self.device = endpoint.device
        self._resets: list[tuple[int, int]] = []
        self._outbox = Outbox()
        self._socket: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.connect(endpoint.address)
        self._closer = weakref.finalize(self, _goodbye, self._socket, self._outbox)
        hello = {"op": "hello", "pid": os.getpid(), "slots": num_envs, "pad": list(pad)}
        reply = self._ask({**hello, "identity": identity})
        self.device = reply["device"]

    @classmethod
    def connect(
        cls,
        endpoint: Endpoint,
        argument: str,
        config: EnvConfig,
        features: dict[str, Feature],
        num_envs: int,
        loading: Loading,
    ) -> ServedPolicy:
        """``lerobot:ARGUMENT`` fitted to the env here, served by the server at ``endpoint``."""
        checkpoint = lerobot_checkpoint(argument, loading)
        try:
            pad = checkpoint.fit(config, features)
        except LeRobotLoadError as exc:
            raise PolicySourceError(str(exc)) from None
        space = config.action_space
        return cls(
            endpoint, checkpoint.identity, checkpoint.input_features, num_envs, pad,
            (space.low, space.high),
        )  # fmt: skip

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        self._resets.extend(zip(slots, seeds, strict=True))

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        layout, rest = self._outbox.write(batch)
        resets, self._resets = self._resets, []
        reply = self._ask({"op": "act", "resets": resets, "layout": layout, "rest": rest})
        self.last_raw = np.stack(reply["actions"])
        if self.bounds is None:
            return self.last_raw
        return np.clip(self.last_raw, *self.bounds).astype(np.float32)

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its reply, as long as the server runs."""
        self._socket.send(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))
        while not self._socket.poll(int(POLL_S * 1000)):
            if not self.endpoint.alive():
                raise self.endpoint.ended()
        reply: dict[str, Any] = pickle.loads(self._socket.recv())
        if "error" in reply:
            raise PolicyServerError(reply["error"])
        return reply

    def identity(self) -> dict[str, str | None]:
        return dict(self._identity)

    def close(self) -> None:
        """Tell the server this worker's slots are done; free the shared block."""
        self._closer()


def _goodbye(socket: zmq.Socket[bytes], outbox: Outbox) -> None:
    with contextlib.suppress(zmq.ZMQError):
        socket.send(pickle.dumps({"op": "bye"}), zmq.NOBLOCK)
    socket.close(linger=100)
    outbox.close()
