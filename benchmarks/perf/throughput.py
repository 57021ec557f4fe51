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


def harness_name(workers: int, mode: str) -> str:
    return f"harness -n {workers}" + (f" {mode}" if mode else "")


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
    modes = args.renders.split(",") if args.pixels else [""]  # "": state, nothing rendered
    with tempfile.TemporaryDirectory() as tmp:
        metrics = Path(tmp) / "m.json"
        # name -> run; the harness once per render mode with pixels, once without.
        configs: dict[str, Any] = {"plain loop": plain, "plain x2 procs": plain_two}
        for mode in modes:
            for workers in (0, 2):
                configs[harness_name(workers, mode)] = lambda a, w=workers, r=mode: harness(
                    a, w, metrics, r or None
                )
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
        for round_ in range(args.rounds):
            for name, run in configs.items():
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
    for name in configs:
        steps = runs[name][0]["steps"]
        wall = statistics.median(r["wall"] for r in runs[name])
        # eval_s sums the tasks' times, so a steps-per-second within rollouts means one process.
        in_rollout = statistics.median(r["steps"] / r["eval_s"] for r in runs[name])
        extra = f"  (in rollouts {in_rollout:.1f})" if name.startswith("harness -n 0") else ""
        print(f"  {name:<22} {steps:>7} steps  {wall:6.1f} s  {rate[name]:7.1f} steps/s{extra}")
    for mode in modes:
        n0, n2 = harness_name(0, mode), harness_name(2, mode)
        print(f"  ratio {n0} / plain loop: {rate[n0] / rate['plain loop']:.2f}"
              + ("" if args.pixels else " (target >= 0.95)"))  # fmt: skip
        print(f"  ratio {n2} / {n0}: {rate[n2] / rate[n0]:.2f} (target >= 1.8)")
    print(
        f"  ratio plain x2 procs / plain loop: {rate['plain x2 procs'] / rate['plain loop']:.2f} "
        "(what two processes gain on this machine)"
    )


if __name__ == "__main__":
    main()
