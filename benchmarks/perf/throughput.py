"""Env-steps per second: the harness (``-n 0`` and ``-n 2``) against a plain loop, side by side.

Each configuration runs as its own process, timed from start to exit (interpreter start,
imports, env builds and rollouts), in interleaved rounds; the medians and their ratios are
printed. The harness also reports its in-rollout rate (steps over the sum of per-task eval_s).
``--pixels N`` renders the corner2 camera at NxN on every step: the plain loop as the simulator
renders by default, the harness with ``--benchmark-obs=pixels`` in each of ``--renders``.

    python benchmarks/perf/throughput.py --task MT10 --episodes 10 --rounds 3
    python benchmarks/perf/throughput.py --task reach-v3,push-v3 --episodes 2 --pixels 128
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def harness(
    args: argparse.Namespace, workers: int, metrics: Path, render: str | None = None
) -> dict[str, float]:
    command = [
        sys.executable, "-m", "pytest", "benchmarks/test_metaworld.py", "-q",
        "-p", "no:cacheprovider", "-k", "test_success_rate", f"--benchmark-task={args.task}",
        f"--benchmark-episodes={args.episodes}", f"--benchmark-seed={args.seed}",
        f"--benchmark-metrics={metrics}", "-n", str(workers),
    ]  # fmt: skip
    if render:
        command += ["--benchmark-obs=pixels", f"--benchmark-image-size={args.pixels}",
                    f"--benchmark-render={render}"]  # fmt: skip
    wall, _ = timed(command)
    document = json.loads(metrics.read_text())
    steps = sum(e["steps"] for row in document["results"] for e in row["episodes"])
    return {"wall": wall, "steps": steps, "eval_s": document["overall"]["eval_s"]}


def plain_command(args: argparse.Namespace, tasks: str) -> list[str]:
    return [
        sys.executable, str(HERE / "plain_loop.py"), f"--task={tasks}",
        f"--episodes={args.episodes}", f"--seed={args.seed}", f"--pixels={args.pixels}",
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
    parser.add_argument("--pixels", type=int, default=0, help="render corner2 at NxN")
    parser.add_argument("--renders", default="faithful,fast", help="harness render modes")
    args = parser.parse_args()
    # name -> (label, run); the harness once per render mode with pixels, once without.
    configs: dict[str, tuple[str, Any]] = {
        "plain": ("plain loop", plain),
        "plain2": ("plain x2 procs", plain_two),
    }
    for render in args.renders.split(",") if args.pixels else [None]:
        for workers in (0, 2):
            name = f"n{workers}" + (f" {render}" if render else "")
            configs[name] = (
                f"harness -n {workers}" + (f" {render}" if render else ""),
                lambda a, w=workers, r=render: harness(a, w, Path(tmp) / "m.json", r),
            )
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name, (_, run) in configs.items():
                runs[name].append(run(args))
            print(f"round {round_ + 1}/{args.rounds}: " + ", ".join(
                f"{name} {r[-1]['steps'] / r[-1]['wall']:.1f} steps/s" for name, r in runs.items()
            ), flush=True)  # fmt: skip
    rate = {
        name: statistics.median(r["steps"] / r["wall"] for r in rs) for name, rs in runs.items()
    }
    pixels = f"corner2 {args.pixels}x{args.pixels} on every step" if args.pixels else "state"
    print(
        f"\n{args.task}, {args.episodes} episodes per task, {pixels}, {args.rounds} rounds "
        f"(medians), {os.cpu_count()} CPUs, PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    )
    for name, (label, _) in configs.items():
        steps = runs[name][0]["steps"]
        wall = statistics.median(r["wall"] for r in runs[name])
        in_rollout = statistics.median(r["steps"] / r["eval_s"] for r in runs[name])
        extra = f"  (in rollouts {in_rollout:.1f})" if name.startswith("n") else ""
        print(f"  {label:<22} {steps:>7} steps  {wall:6.1f} s  {rate[name]:7.1f} steps/s{extra}")
    for render in args.renders.split(",") if args.pixels else [None]:
        n0, n2 = (f"n{w}" + (f" {render}" if render else "") for w in (0, 2))
        mode = f" {render}" if render else ""
        print(f"  ratio harness -n 0{mode} / plain loop: {rate[n0] / rate['plain']:.2f}"
              + ("" if args.pixels else " (target >= 0.95)"))  # fmt: skip
        print(f"  ratio harness -n 2{mode} / harness -n 0{mode}: {rate[n2] / rate[n0]:.2f} "
              "(target >= 1.8)")  # fmt: skip
    print(
        f"  ratio plain x2 procs / plain loop: {rate['plain2'] / rate['plain']:.2f} "
        "(what two processes gain on this machine)"
    )


if __name__ == "__main__":
    main()
