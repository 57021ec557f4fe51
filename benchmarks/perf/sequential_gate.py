"""Sequential gating against the fixed plan, in simulation: false alarms, episodes used, power.

Sessions of 10 tasks, each with a 50-episode snapshot and a plan of 50 paired episodes, judged
by ``metrics.sequential`` (a task stops at the first block of ``batch`` episodes after which it
is REGRESSED or HELD) beside the fixed plan's exact test (McNemar, Tarone + Holm at the same
alpha, all 50 episodes). Two models of the new run:

- ``replay``: a policy whose episodes repeat the snapshot's but for those it now loses (each
  baseline success lost with probability drop / rate): a deterministic policy on its own seeds;
- ``fresh``: new outcomes drawn afresh at rate - drop, independent of the snapshot's: the
  hardest case for pairing (discordant pairs both ways even with no change).

Printed as Markdown: per rate, batch and model, the session-wide false-alarm rate with no
change and the episodes used (as a fraction of the fixed plan); per drop, the power (the
dropped task caught) and episodes used by that task, sequential beside fixed.

    python benchmarks/perf/sequential_gate.py --sessions 10000
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import binom

from pytest_benchmarks.metrics.sequential import (
    DEFAULT_BETA,
    DEFAULT_DELTA,
    HoldProcess,
    family,
    max_regression_e,
    regression_e,
)

TASKS, EPISODES, ALPHA = 10, 50, 0.05
RATES = (0.5, 0.8, 0.95, 1.0)
DROPS = (0.1, 0.2, 0.3, 0.5)


def outcomes(
    rate: float, drops: np.ndarray, model: str, sessions: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Baseline and new outcomes, shape (sessions, tasks, episodes); ``drops`` per task."""
    shape = (sessions, len(drops), EPISODES)
    base = rng.random(shape) < rate
    drop = drops[None, :, None]
    if model == "replay":
        lose = rng.random(shape) < np.divide(drop, rate, out=np.zeros_like(drop), where=rate > 0)
        return base, base & ~lose
    return base, rng.random(shape) < np.maximum(rate - drop, 0.0)


def sequential(
    base: np.ndarray, new: np.ndarray, batch: int, beta: float, delta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each task's verdict (True: REGRESSED) and the episodes it used, deciding only at the
    end of each block of ``batch`` episodes, as a run does."""
    sessions, tasks, n = base.shape
    diffs = base.astype(int) - new.astype(int)
    # Tarone's rule for e-values, per session, from the baselines alone.
    threshold = np.empty((sessions, tasks))
    able = np.zeros((sessions, tasks), dtype=bool)
    for s in range(sessions):
        max_es = {str(t): max_regression_e(int(base[s, t].sum())) for t in range(tasks)}
        chosen, m = family(max_es, ALPHA)
        threshold[s] = m / ALPHA
        able[s] = [str(t) in chosen for t in range(tasks)]
    hold = HoldProcess(sessions * tasks, delta)
    lost = np.zeros((sessions, tasks))
    gained = np.zeros((sessions, tasks))
    decided = np.zeros((sessions, tasks), dtype=bool)
    regressed = np.zeros((sessions, tasks), dtype=bool)
    used = np.full((sessions, tasks), n)
    for i in range(n):
        d = diffs[:, :, i]
        lost += d == 1
        gained += d == -1
        e_hold = hold.update(d.ravel()).reshape(sessions, tasks)
        if (i + 1) % batch and i + 1 < n:
            continue  # a block's episodes run together: the gate looks at its end
        e_drop = regression_e(lost, gained)
        now_regressed = ~decided & able & (e_drop >= threshold)
        now_held = ~decided & ~now_regressed & (e_hold >= 1.0 / beta)
        regressed |= now_regressed
        stop = now_regressed | now_held
        used[stop] = i + 1
        decided |= stop
    return regressed, used


def fixed(base: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The fixed plan's verdicts: McNemar's exact one-sided p on all episodes, Holm's
    step-down at ALPHA over the tasks (all can fail at these counts)."""
    lost = (base & ~new).sum(axis=2)
    gained = (~base & new).sum(axis=2)
    p = np.where(lost + gained > 0, binom.sf(lost - 1, lost + gained, 0.5), 1.0)
    order = np.argsort(p, axis=1)
    ranked = np.take_along_axis(p, order, axis=1)
    levels = ALPHA / (p.shape[1] - np.arange(p.shape[1]))
    passes = np.cumprod(ranked < levels, axis=1).astype(bool)
    regressed = np.zeros_like(passes)
    np.put_along_axis(regressed, order, passes, axis=1)
    return regressed


def table(sessions: int, batches: list[int], beta: float, delta: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"{sessions} sessions of {TASKS} tasks x {EPISODES} paired episodes per cell, "
          f"alpha {ALPHA}; HELD rules out a {delta:.0%} drop at beta {beta}.\n")  # fmt: skip
    print(
        "| rate | batch | model | no change: false alarms seq / fixed | episodes used | "
        + " | ".join(f"drop {d:.0%}: caught seq / fixed, episodes" for d in DROPS)
        + " |"
    )
    print("|---|---|---|---|---|" + "---|" * len(DROPS))
    for rate in RATES:
        for batch in batches:
            for model in ("replay", "fresh"):
                base, new = outcomes(rate, np.zeros(TASKS), model, sessions, rng)
                seq, used = sequential(base, new, batch, beta, delta)
                alarms = seq.any(axis=1).mean(), fixed(base, new).any(axis=1).mean()
                share = used.mean() / EPISODES
                cells = [f"{rate:.0%}", str(batch), model,
                         f"{alarms[0]:.2%} / {alarms[1]:.2%}", f"{share:.0%}"]  # fmt: skip
                for drop in DROPS:
                    if drop > rate:
                        cells.append("–")
                        continue
                    drops = np.where(np.arange(TASKS) == TASKS - 1, drop, 0.0)
                    base, new = outcomes(rate, drops, model, sessions, rng)
                    seq, used = sequential(base, new, batch, beta, delta)
                    caught = seq[:, -1].mean(), fixed(base, new)[:, -1].mean()
                    cells.append(f"{caught[0]:.0%} / {caught[1]:.0%}, "
                                 f"{used[:, -1].mean() / EPISODES:.0%}")  # fmt: skip
                print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--beta", type=float, default=DEFAULT_BETA)
    parser.add_argument("--delta", type=float, default=DEFAULT_DELTA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    table(args.sessions, args.batch, args.beta, args.delta, args.seed)


if __name__ == "__main__":
    main()
