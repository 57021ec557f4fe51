"""Env-steps per second: the harness (``-n 0`` and ``-n 2``) against a plain loop, side by side.

Each configuration runs as its own process, timed from start to exit (interpreter start,
imports, env builds and rollouts), in interleaved rounds; the medians and their ratios are
printed. The harness also reports its in-rollout rate (steps over the sum of per-task eval_s).

    python benchmarks/perf/throughput.py --task MT10 --episodes 10 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def harness(args: argparse.Namespace, workers: int, metrics: Path) -> dict[str, float]:
    command = [
        sys.executable, "-m", "pytest", "benchmarks/test_metaworld.py", "-q",
        "-p", "no:cacheprovider", "-k", "test_success_rate", f"--benchmark-task={args.task}",
        f"--benchmark-episodes={args.episodes}", f"--benchmark-seed={args.seed}",
        f"--benchmark-metrics={metrics}", "-n", str(workers),
    ]  # fmt: skip
    wall, _ = timed(command)
    document = json.loads(metrics.read_text())
    steps = sum(e["steps"] for row in document["results"] for e in row["episodes"])
    return {"wall": wall, "steps": steps, "eval_s": document["overall"]["eval_s"]}


def plain_command(args: argparse.Namespace, tasks: str) -> list[str]:
    return [
        sys.executable, str(HERE / "plain_loop.py"), f"--task={tasks}",
        f"--episodes={args.episodes}", f"--seed={args.seed}",
    ]  # fmt: skip


def plain(args: argparse.Namespace) -> dict[str, float]:
    wall, out = timed(plain_command(args, args.task))
    return {"wall": wall, "steps": int(out.split()[-1]), "eval_s": wall}


def plain_two(args: argparse.Namespace) -> dict[str, float]:
    """The plain loop in two processes at once, tasks split alternately: the machine's ceiling."""
    from pytest_benchmarks.core import catalog

    names = [t.task for t in catalog.get("metaworld").select(args.task.split(","))]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(plain_command(args, ",".join(names[i::2])), cwd=ROOT, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for i in range(2)
    ]  # fmt: skip
    steps = sum(int(p.communicate()[0].split()[-1]) for p in procs)
    wall = time.perf_counter() - started
    return {"wall": wall, "steps": steps, "eval_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="MT10")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"plain": [], "plain2": [], "n0": [], "n2": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            runs["plain"].append(plain(args))
            runs["plain2"].append(plain_two(args))
            runs["n0"].append(harness(args, 0, Path(tmp) / "n0.json"))
            runs["n2"].append(harness(args, 2, Path(tmp) / "n2.json"))
            print(f"round {round_ + 1}/{args.rounds}: " + ", ".join(
                f"{name} {r[-1]['steps'] / r[-1]['wall']:.0f} steps/s" for name, r in runs.items()
            ), flush=True)  # fmt: skip
    rate = {
        name: statistics.median(r["steps"] / r["wall"] for r in rs) for name, rs in runs.items()
    }
    in_rollout = statistics.median(r["steps"] / r["eval_s"] for r in runs["n0"])
    print(
        f"\n{args.task}, {args.episodes} episodes per task, {args.rounds} rounds (medians), "
        f"{os.cpu_count()} CPUs"
    )
    for name, label in (
        ("plain", "plain loop"),
        ("plain2", "plain x2 procs"),
        ("n0", "harness -n 0"),
        ("n2", "harness -n 2"),
    ):
        steps = runs[name][0]["steps"]
        wall = statistics.median(r["wall"] for r in runs[name])
        print(f"  {label:<14} {steps:>7} steps  {wall:6.1f} s  {rate[name]:6.0f} steps/s")
    print(f"  harness -n 0 in-rollout rate: {in_rollout:.0f} steps/s")
    print(f"  ratio harness -n 0 / plain loop: {rate['n0'] / rate['plain']:.2f} (target >= 0.95)")
    print(f"  ratio harness -n 2 / harness -n 0: {rate['n2'] / rate['n0']:.2f} (target >= 1.8)")
    print(
        f"  ratio plain x2 procs / plain loop: {rate['plain2'] / rate['plain']:.2f} "
        "(what two processes gain on this machine)"
    )


if __name__ == "__main__":
    main()
