"""Power of the committed gate: for every committed snapshot
(``benchmarks/__benchmark_snapshots__``), the exact power of the default run (the project's
settings: the snapshot's episodes, paired) to catch a 30-point drop of that task alone, with the
tasks of the default run as the family. Simulated sessions at any rate, fixed and sequential
side by side, are ``pytest-benchmarks plan``.

    python benchmarks/perf/gate_power.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import binom

from pytest_benchmarks.envs.metaworld.tasks import MT10
from pytest_benchmarks.metrics.gate import tarone
from pytest_benchmarks.metrics.stats import mcnemar_lower

SNAPSHOTS = Path(__file__).resolve().parents[1] / "__benchmark_snapshots__"
#: The tasks each benchmark's default run gates (the project's settings).
DEFAULT_RUN = {"metaworld": MT10}


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
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--drop", type=float, default=0.3)
    args = parser.parse_args()
    committed(args.alpha, args.drop)


if __name__ == "__main__":
    main()
