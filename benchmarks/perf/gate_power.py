"""Power of the regression gate: how often a real drop of 10, 20 or 30 points is caught.

Simulates 50 episodes per task. Unpaired: baseline and new counts are independent binomials
(Fisher's exact test). Paired: the new run replays the baseline's episodes and each baseline
success is lost with probability drop / baseline rate, so the rate falls by ``drop`` on average
and no failure turns into a success (McNemar's exact test on the lost episodes). The level is
alpha = 0.05 for one task, and alpha / 10 for a session of ten tasks (Bonferroni). Prints a
Markdown table.

    python benchmarks/perf/gate_power.py --runs 2000
"""

from __future__ import annotations

import argparse

import numpy as np

from pytest_benchmarks.metrics.stats import fisher_lower, mcnemar_lower


def power(base_rate: float, drop: float, n: int, threshold: float, paired: bool, runs: int,
          rng: np.random.Generator) -> float:  # fmt: skip
    caught = 0
    for _ in range(runs):
        base = rng.random(n) < base_rate
        if paired:
            lost = int((base & (rng.random(n) < drop / base_rate)).sum())
            p_value = mcnemar_lower(lost, 0)
        else:
            new = int((rng.random(n) < base_rate - drop).sum())
            p_value = fisher_lower(int(base.sum()), n, new, n)
        caught += p_value < threshold
    return caught / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.episodes} episodes per task, {args.runs} simulated runs per cell\n")
    print("| baseline | drop | paired, 1 task | paired, 10 tasks | unpaired, 1 task "
          "| unpaired, 10 tasks |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for base_rate in (0.9, 0.7, 0.5):
        for drop in (0.1, 0.2, 0.3):
            cells = [
                power(base_rate, drop, args.episodes, 0.05 / tasks, paired, args.runs, rng)
                for paired in (True, False)
                for tasks in (1, 10)
            ]
            row = " | ".join(f"{100 * c:.0f}%" for c in cells)
            print(f"| {100 * base_rate:.0f}% | {100 * drop:.0f} pts | {row} |", flush=True)


if __name__ == "__main__":
    main()
