"""What one step's request to the policy server costs in transport alone: a worker sends a batch
of camera images (uint8, HxWx3 per slot) and gets the actions back, from another process.

Side by side, alternating, medians of several rounds:
- ``zmq+shm``: the server's way: the images copied into shared memory, a small pyzmq message
  (DEALER to ROUTER over ``ipc://``) says so, the server copies them out;
- ``zmq+pickle``: the images pickled through the same pyzmq sockets;
- ``pipe+pickle``: ``multiprocessing.connection`` (the standard library's pipe), pickled;
- ``pipe+shm``: that pipe, with the images in shared memory.

    python benchmarks/perf/server_transport.py [--size 480] [--slots 10] [--steps 200]
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ("zmq+shm", "zmq+pickle", "pipe+shm", "pipe+pickle")


def serve_zmq(address: str, steps: int) -> None:
    import zmq

    from pytest_benchmarks.policies.shared_batch import Inbox

    socket = zmq.Context.instance().socket(zmq.ROUTER)
    socket.bind(address)
    inbox: Inbox | None = None
    for _ in range(steps):
        who, data = socket.recv_multipart()
        message = pickle.loads(data)
        if message.get("layout") is not None:
            inbox = Inbox(message["layout"])
        batch = inbox.batch(message["rest"]) if inbox else message["batch"]
        socket.send_multipart([who, pickle.dumps({"actions": actions_for(batch)}, -1)])
    if inbox is not None:
        inbox.close()
    socket.close(0)


def serve_pipe(conn: Connection, steps: int) -> None:
    from pytest_benchmarks.policies.shared_batch import Inbox

    inbox: Inbox | None = None
    for _ in range(steps):
        message = conn.recv()
        if message.get("layout") is not None:
            inbox = Inbox(message["layout"])
        batch = inbox.batch(message["rest"]) if inbox else message["batch"]
        conn.send({"actions": actions_for(batch)})
    if inbox is not None:
        inbox.close()


def actions_for(batch: dict[str, Any]) -> np.ndarray:
    """A stand-in for the policy that proves the images arrived: each slot's image sum."""
    image = batch["observation.image"]
    actions = np.zeros((len(image), 4), np.float64)
    actions[:, 0] = image.reshape(len(image), -1).sum(axis=1)
    return actions


def one_round(kind: str, batch: dict[str, Any], steps: int) -> float:
    """Seconds per request of ``kind`` over ``steps`` requests (after one warm-up)."""
    from pytest_benchmarks.policies.shared_batch import Outbox

    context = multiprocessing.get_context("spawn")
    outbox = Outbox()
    folder = tempfile.mkdtemp()
    if kind.startswith("zmq"):
        import zmq

        address = f"ipc://{folder}/t.sock"
        server = context.Process(target=serve_zmq, args=(address, steps + 1))
        server.start()
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.connect(address)

        def ask(message: dict[str, Any]) -> Any:
            socket.send(pickle.dumps(message, -1))
            return pickle.loads(socket.recv())
    else:
        mine, theirs = context.Pipe()
        server = context.Process(target=serve_pipe, args=(theirs, steps + 1))
        server.start()

        def ask(message: dict[str, Any]) -> Any:
            mine.send(message)
            return mine.recv()

    def request() -> dict[str, Any]:
        if kind.endswith("shm"):
            layout, rest = outbox.write(batch)
            return {"layout": layout, "rest": rest}
        return {"layout": None, "batch": batch}

    reply = ask(request())  # warm-up (and the layout), checked: the images arrived whole
    if not np.array_equal(reply["actions"], actions_for(batch)):
        raise SystemExit(f"{kind}: the server read other images than the worker sent")
    started = time.perf_counter()
    for _ in range(steps):
        ask(request())
    elapsed = (time.perf_counter() - started) / steps
    server.join()
    outbox.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=480)
    parser.add_argument("--slots", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    batch = {
        "observation.image": rng.integers(0, 256, (args.slots, args.size, args.size, 3), np.uint8),
        "observation.state": rng.normal(size=(args.slots, 4)).astype(np.float32),
        "task": ["push the puck"] * args.slots,
    }
    mib = batch["observation.image"].nbytes / 2**20
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(args.rounds):
        for kind in KINDS:
            times[kind].append(one_round(kind, batch, args.steps))
    print(f"{args.slots} slots of {args.size}x{args.size}x3 uint8 ({mib:.1f} MiB a request), "
          f"{args.steps} requests, medians of {args.rounds} rounds:")  # fmt: skip
    for kind in KINDS:
        median = statistics.median(times[kind])
        print(f"  {kind:12s} {median * 1000:7.2f} ms a request ({mib / median:7.0f} MiB/s)")


if __name__ == "__main__":
    main()
