"""The policy server: one process per device loads a LeRobot policy once and acts for every
worker's env slots, batched together.

Workers (``policies.served``) connect over ZeroMQ (a ROUTER socket here, a DEALER per worker)
and send one request per vector-env step: the slots that start an episode (with their seeds)
and the batch, whose arrays lie in shared memory (``policies.shared_batch``). The server gathers
requests until every active worker has one waiting, ``max_batch`` slots are gathered, or
``wait_s`` has passed since the first, then acts for all of them at once under the rules of
``--benchmark-batched-inference``: each slot keeps its own episode state and RNG under the key
(worker, slot), and slots at the same phase share one ``select_action``. A failed call (an
exception, CUDA running out of memory) answers every request of the batch with one line and the
server goes on; a worker whose process is gone is dropped, so it never holds up the others.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import zmq

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.policies.endpoint import STARTED_MARK, STARTED_PREFIX, process_alive
from pytest_benchmarks.policies.shared_batch import Inbox

#: How long a gathered request waits for the other workers' (a bound, not a target).
WAIT_S = 0.005
#: The most slots acted for in one gathering.
MAX_BATCH = 256
#: A worker that sent nothing for this long (building its next task's envs) is not waited for.
IDLE_S = 1.0
#: How often the server looks for ended workers and an ended parent.
CHECK_S = 0.5


@dataclass
class Client:
    """A connected worker: its process, its slots' inputs to pad, its shared block."""

    pid: int
    slots: int
    pad: list[tuple[str, tuple[int, ...]]]
    seen: float = field(default_factory=time.monotonic)
    inbox: Inbox | None = None

    def alive(self) -> bool:
        return process_alive(self.pid)


class PolicyServer:
    """Gathers the workers' requests and acts for them with one policy."""

    def __init__(
        self,
        actor: Any,
        identity: dict[str, str | None],
        address: str,
        wait_s: float = WAIT_S,
        max_batch: int = MAX_BATCH,
    ) -> None:
        #: A ``policies.lerobot.LeRobotPolicy`` keyed by (worker, slot).
        self.actor = actor
        self.identity = identity
        self.wait_s, self.max_batch = wait_s, max_batch
        self.socket: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind(address)
        self.clients: dict[bytes, Client] = {}
        #: Figures for the log: gatherings, slots acted for, the largest gathering.
        self.calls = self.slots_served = self.largest = 0
        self._checked = 0.0

    def serve(self, parent: int | None = None) -> None:
        """Serve until the parent process (when given) is gone."""
        while parent is None or os.getppid() == parent:
            if self.socket.poll(int(CHECK_S * 1000)):
                self.gather_and_act()
            self.drop_ended()

    def gather_and_act(self) -> None:
        """Take the requests waiting now and those that arrive within the bound; act."""
        pending: dict[bytes, dict[str, Any]] = {}
        deadline = time.monotonic() + self.wait_s
        while True:
            while self.socket.poll(0):
                who, data = self.socket.recv_multipart()
                self.receive(who, pickle.loads(data), pending)
            if not pending or self.complete(pending):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # Wake at least every CHECK_S, so a worker that ended or went idle meanwhile
            # is no longer waited for.
            self.socket.poll(max(1, int(min(left, CHECK_S) * 1000)))
        if pending:
            self.act(pending)

    def complete(self, pending: dict[bytes, dict[str, Any]]) -> bool:
        """Every active worker's request is in, or the batch is full."""
        now = time.monotonic()
        if now - self._checked > CHECK_S:
            self.drop_ended()
            for who in [w for w in pending if w not in self.clients]:
                del pending[who]
        if sum(self.clients[w].slots for w in pending) >= self.max_batch:
            return True
        waiting = {w for w, c in self.clients.items() if now - c.seen < IDLE_S}
        return waiting <= set(pending)

    def receive(self, who: bytes, message: dict[str, Any], pending: dict[bytes, Any]) -> None:
        op = message.get("op")
        if op == "hello":
            self.hello(who, message)
        elif op == "bye":
            self.drop(who)
        elif op == "act" and who in self.clients:
            self.clients[who].seen = time.monotonic()
            pending[who] = message
        elif op == "act":
            self.reply(who, error="the policy server does not know this worker (no hello)")

    def hello(self, who: bytes, message: dict[str, Any]) -> None:
        if message["identity"] != self.identity:
            self.reply(
                who,
                error=f"the policy server holds {self.identity}, the worker asks for "
                f"{message['identity']}",
            )
            return
        self.drop(who)
        self.clients[who] = Client(message["pid"], message["slots"], message["pad"])
        self.actor.add_slots((who, slot) for slot in range(message["slots"]))
        self.reply(who, device=str(self.actor.device))

    def drop(self, who: bytes, ended: bool = False) -> None:
        """Forget a worker's slots; one that ``ended`` without a goodbye leaves its block."""
        client = self.clients.pop(who, None)
        if client is None:
            return
        self.actor.drop_slots((who, slot) for slot in range(client.slots))
        if client.inbox is not None:
            client.inbox.close(unlink_block=ended)

    def drop_ended(self) -> None:
        self._checked = time.monotonic()
        for who in [w for w, c in self.clients.items() if not c.alive()]:
            self.drop(who, ended=True)

    def act(self, pending: dict[bytes, dict[str, Any]]) -> None:
        """One gathering: each worker's resets and observations, one ``act_on`` for all."""
        from pytest_benchmarks.policies.lerobot_observation import observation

        observations: dict[Any, Any] = {}
        served: list[bytes] = []
        for who, message in pending.items():
            client = self.clients[who]
            try:
                if message.get("layout") is not None:
                    if client.inbox is not None:
                        client.inbox.close()
                    client.inbox = Inbox(message["layout"])
                if client.inbox is None:
                    raise ValueError("the worker sent no layout of its batch")
                batch = client.inbox.batch(message["rest"])
                resets = message["resets"]
                self.actor.reset([(who, slot) for slot, _ in resets], [s for _, s in resets])
                for slot in range(client.slots):
                    observations[(who, slot)] = observation(batch, slot, client.pad)
            except Exception as exc:
                self.reply(who, error=f"the policy server cannot read the request: {one_line(exc)}")
                continue
            served.append(who)
        if not served:
            return
        try:
            actions = self.actor.act_on(observations)
        except Exception as exc:
            error = f"the policy server's policy failed: {one_line(exc)}"
            for who in served:
                self.reply(who, error=error)
            free_device_memory(exc)
            return
        for who in served:
            slots = self.clients[who].slots
            self.reply(who, actions=[actions[(who, slot)] for slot in range(slots)])
        self.calls += 1
        self.slots_served += len(observations)
        self.largest = max(self.largest, len(observations))

    def reply(self, who: bytes, **message: Any) -> None:
        self.socket.send_multipart([who, pickle.dumps(message, pickle.HIGHEST_PROTOCOL)])

    def close(self) -> None:
        for who in list(self.clients):
            self.drop(who)
        self.socket.close(0)


def free_device_memory(exc: BaseException) -> None:
    """After CUDA ran out of memory, give the cached blocks back so the next batch may fit."""
    if "out of memory" in str(exc).lower():
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_benchmarks.serving.server``: load the policy, serve until the parent
    (the pytest controller) ends. A policy that cannot load is one line on stderr, exit 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--policy", required=True, help="lerobot:REPO_ID_OR_DIR")
    parser.add_argument("--device", required=True)
    parser.add_argument("--rename-map", default="{}", help="a JSON object")
    parser.add_argument("--wait-ms", type=float, default=WAIT_S * 1000)
    parser.add_argument("--max-batch", type=int, default=MAX_BATCH)
    args = parser.parse_args(argv)
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    from pytest_benchmarks.core.policy_spec import Loading, PolicySpec
    from pytest_benchmarks.policies.hub import PolicySourceError
    from pytest_benchmarks.policies.lerobot import LeRobotLoadError, LeRobotPolicy
    from pytest_benchmarks.policies.sources import lerobot_checkpoint

    spec = PolicySpec.parse(args.policy)
    renames = tuple(sorted(json.loads(args.rename_map).items()))
    loading = Loading(args.device, renames, batched_inference=True)
    started = time.perf_counter()
    try:
        checkpoint = lerobot_checkpoint(spec.argument, loading)
        policy, processors = checkpoint.load()
    except (PolicySourceError, LeRobotLoadError) as exc:
        print(f"PolicyServerError: {exc}", file=sys.stderr, flush=True)
        return 1
    actor = LeRobotPolicy(
        policy, processors, checkpoint.identity, args.device, 0,
        renames=checkpoint.renames, batched=True,
    )  # fmt: skip
    server = PolicyServer(
        actor, checkpoint.identity, args.address, args.wait_ms / 1000, args.max_batch
    )
    print(
        f"{STARTED_PREFIX}{args.policy} on {args.device} at {args.address}{STARTED_MARK}"
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    try:
        server.serve(parent)
    finally:
        print(
            f"policy server: {server.calls} gatherings, {server.slots_served} slot-steps, "
            f"largest {server.largest} slots",
            flush=True,
        )
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
