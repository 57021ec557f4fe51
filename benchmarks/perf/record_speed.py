"""What ``--benchmark-record`` costs: env-steps/s with and without recording, side by side.

Runs the same episodes of one Meta-World task with its scripted expert through
``pytest_benchmarks.api.evaluate`` (the plugin's evaluation path), alternating a run without
recording and one with ``record=DIR``, for several rounds, and prints the medians: env-steps
per second over the rollout (the episodes, with the part files written as they end), each
call's whole wall time (so the difference includes LeRobot's writer building the dataset at
the end), and the dataset's size per episode.

    python benchmarks/perf/record_speed.py [--obs state|pixels] [--image-size 64]
        [--episodes 10] [--rounds 3] [--task reach-v3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pytest_benchmarks.api import evaluate


def steps_per_s(run: object) -> float:
    results = run.results  # type: ignore[attr-defined]
    steps = sum(e.steps for r in results for e in r.episodes)
    return steps / sum(r.eval_s for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reach-v3")
    parser.add_argument("--obs", choices=("state", "pixels"), default="state")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    common = {"tasks": [args.task], "episodes": args.episodes, "batch_size": args.batch_size,
              "obs": args.obs, "image_size": args.image_size}  # fmt: skip
    plain: list[float] = []
    recording: list[float] = []
    wall: dict[str, list[float]] = {"plain": [], "record": []}
    per_episode: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            started = time.perf_counter()
            plain.append(steps_per_s(evaluate("metaworld", **common)))
            wall["plain"].append(time.perf_counter() - started)
            started = time.perf_counter()
            run = evaluate("metaworld", **common, record=Path(tmp) / f"round-{round_}")
            wall["record"].append(time.perf_counter() - started)
            recording.append(steps_per_s(run))
            assert run.dataset is not None
            per_episode.append(run.dataset.size_bytes / run.dataset.episodes)
            print(f"round {round_ + 1}: {plain[-1]:.1f} env-steps/s plain, {recording[-1]:.1f} "
                  f"recording; wall {wall['plain'][-1]:.1f} s and {wall['record'][-1]:.1f} s",
                  flush=True)  # fmt: skip
    label = f"{args.task}, {args.obs}" + (f" {args.image_size}x{args.image_size}"
                                          if args.obs == "pixels" else "")  # fmt: skip
    print(f"\n{label}, {args.episodes} episodes, batch {args.batch_size}, "
          f"medians of {args.rounds} rounds:")  # fmt: skip
    print(f"  env-steps/s without recording  {statistics.median(plain):8.1f}")
    print(
        f"  env-steps/s while recording    {statistics.median(recording):8.1f}  "
        f"({statistics.median(r / p for r, p in zip(recording, plain, strict=True)):.2f}x)"
    )
    extra = statistics.median(r - p for r, p in zip(wall["record"], wall["plain"], strict=True))
    print(f"  wall time per run, plain       {statistics.median(wall['plain']):8.1f} s")
    print(
        f"  wall time per run, recording   {statistics.median(wall['record']):8.1f} s  "
        f"(+{extra:.1f} s: parts and the dataset build)"
    )
    print(f"  dataset size per episode       {statistics.median(per_episode) / 1e3:8.1f} kB")


if __name__ == "__main__":
    main()
