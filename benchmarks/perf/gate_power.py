"""Power of the regression gate: how often a real drop of 10, 20 or 30 points is caught.

Two parts, printed as Markdown:

1. Simulated sessions of 10 tasks (true rates 50% to 95%) at 10, 20 and 50 episodes per task,
   the old gate (Bonferroni over every task compared) beside the new one (Tarone's rule, then
   Holm's step-down): the session-wide false-alarm rate when nothing changes, and the fraction
   of dropped tasks caught when one task drops, or when every task drops, by 10, 20 or 30
   points. Paired: the new run replays the baseline's episodes and each baseline success is
   lost with probability drop / rate (McNemar); unpaired: fresh outcomes (Fisher).
2. For every committed snapshot (``benchmarks/__benchmark_snapshots__``), the exact power of the
   default run (the project's settings: the snapshot's episodes, paired) to catch a 30-point
   drop of that task alone, with the tasks of the default run as the family.

    python benchmarks/perf/gate_power.py --runs 500
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import binom

from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.envs.metaworld.tasks import MT10
from pytest_benchmarks.metrics.gate import compare, judge, tarone
from pytest_benchmarks.metrics.stats import mcnemar_lower

SNAPSHOTS = Path(__file__).resolve().parents[1] / "__benchmark_snapshots__"
#: The tasks each benchmark's default run gates (the project's settings).
DEFAULT_RUN = {"metaworld": MT10}


def episodes(outcomes: np.ndarray, offset: int = 0) -> list[EpisodeRecord]:
    return [EpisodeRecord(i, 1000 + i + offset, i % 50, bool(s), 1, 0.0, 0.0, 0.0)
            for i, s in enumerate(outcomes)]  # fmt: skip


Pairs = dict[str, tuple[list[EpisodeRecord], list[EpisodeRecord]]]


def session(
    rates: np.ndarray, drops: np.ndarray, n: int, paired: bool, rng: np.random.Generator
) -> Pairs:
    pairs = {}
    for i, (rate, drop) in enumerate(zip(rates, drops, strict=True)):
        base = rng.random(n) < rate
        if paired:
            new = base & (rng.random(n) >= drop / rate) if drop else rng.random(n) < rate
            pairs[f"t/{i}"] = (episodes(base), episodes(new))
        else:
            pairs[f"t/{i}"] = (episodes(base), episodes(rng.random(n) < rate - drop, n))
    return pairs


def old_gate(pairs: Pairs, alpha: float) -> dict[str, bool]:
    return {t: compare(t, b, n, alpha, len(pairs)).regression for t, (b, n) in pairs.items()}


def new_gate(pairs: Pairs, alpha: float) -> dict[str, bool]:
    return {t: v.regression for t, v in judge(pairs, alpha).items()}


def simulated(runs: int, rng: np.random.Generator) -> None:
    alpha, tasks = 0.05, 10
    rates = np.linspace(0.5, 0.95, tasks)
    print(f"Sessions of {tasks} tasks, true rates 50-95%, alpha {alpha}, {runs} per cell; "
          "old = Bonferroni over all tasks, new = Tarone + Holm.\n")  # fmt: skip
    print("| episodes | pairing | false alarms old / new | drop | one task drops: caught "
          "old / new | every task drops: caught old / new |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for n in (10, 20, 50):
        for paired in (True, False):
            alarms = np.zeros(2)
            for _ in range(runs):
                pairs = session(rates, np.zeros(tasks), n, paired, rng)
                old, new = old_gate(pairs, alpha), new_gate(pairs, alpha)
                alarms += [any(old.values()), any(new.values())]
            for drop in (0.1, 0.2, 0.3):
                one, every = np.zeros(2), np.zeros(2)
                for _ in range(runs):
                    drops = np.where(np.arange(tasks) == tasks - 1, drop, 0.0)
                    pairs = session(rates, drops, n, paired, rng)
                    one += [old_gate(pairs, alpha)[f"t/{tasks - 1}"],
                            new_gate(pairs, alpha)[f"t/{tasks - 1}"]]  # fmt: skip
                    pairs = session(rates, np.full(tasks, drop), n, paired, rng)
                    every += [np.mean(list(old_gate(pairs, alpha).values())),
                              np.mean(list(new_gate(pairs, alpha).values()))]  # fmt: skip
                fa = "" if drop != 0.1 else f"{alarms[0] / runs:.1%} / {alarms[1] / runs:.1%}"
                print(f"| {n} | {'paired' if paired else 'unpaired'} | {fa} | {drop:.0%} | "
                      f"{one[0] / runs:.0%} / {one[1] / runs:.0%} | "
                      f"{every[0] / runs:.0%} / {every[1] / runs:.0%} |", flush=True)  # fmt: skip


def paired_power(successes: int, rate: float, drop: float, threshold: float) -> float:
    """P(McNemar p < threshold) when each of ``successes`` is lost with prob. drop / rate."""
    lost_needed = next(k for k in range(successes + 2) if mcnemar_lower(k, 0) < threshold
                       or k > successes)  # fmt: skip
    if lost_needed > successes:
        return 0.0
    return float(binom.sf(lost_needed - 1, successes, min(1.0, drop / rate)))


def committed(alpha: float, drop: float) -> None:
    print(
        f"\nCommitted snapshots: exact power of the default run to catch a {drop:.0%} drop of "
        "one task (paired, Holm's first step over the run's tasks that can fail).\n"
    )
    print("| benchmark | run | tasks | episodes | lowest power | median power | below 80% |")
    print("|---|---|---|---|---|---|---|")
    for test_dir in sorted(SNAPSHOTS.glob("*/test_no_regression/*")):
        benchmark = test_dir.name
        snaps = {str(p.relative_to(test_dir.parent).with_suffix("")): json.loads(p.read_text())
                 for p in sorted(test_dir.rglob("*.json"))}  # fmt: skip
        runs = {"every snapshot": list(snaps)}
        if benchmark in DEFAULT_RUN:
            runs = {"default (MT10)": [f"metaworld/{t}" for t in DEFAULT_RUN[benchmark]],
                    "MT50 (weekly)": list(snaps)}  # fmt: skip
        for name, tasks in runs.items():
            reach = {t: mcnemar_lower(snaps[t]["successes"], 0) for t in tasks}
            family, _ = tarone(reach, alpha)
            powers = {}
            for t in tasks:
                doc = snaps[t]
                rate = doc["successes"] / doc["n_episodes"]
                level = alpha / max(1, len(family))
                eff = min(drop, rate)  # a 20% task can only drop to 0
                powers[t] = paired_power(doc["successes"], rate, eff, level) if rate else 0.0
            low = min(powers, key=powers.__getitem__)
            weak = [f"{t} {p:.0%}" for t, p in powers.items() if p < 0.8]
            counts = sorted({d["n_episodes"] for d in (snaps[t] for t in tasks)})
            print(f"| {benchmark} | {name} | {len(tasks)} | {'/'.join(map(str, counts))} | "
                  f"{powers[low]:.0%} ({low}) | {np.median(list(powers.values())):.0%} | "
                  f"{', '.join(weak) or 'none'} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-simulation", action="store_true")
    args = parser.parse_args()
    if not args.skip_simulation:
        simulated(args.runs, np.random.default_rng(args.seed))
    committed(0.05, 0.3)


if __name__ == "__main__":
    main()
