"""What a planned gate can do, by simulation with the gate's own code: the chance that a
session with no change fails anywhere (false alarms), that a task which dropped is flagged
(caught), and the share of the plan each gate runs, for the fixed plan and the sequential gate
side by side on the same simulated sessions (``pytest-benchmarks plan``).

A session holds ``len(rates)`` tasks of ``episodes`` episodes against baselines drawn at those
rates; in session *s* task ``s mod tasks`` drops by ``drop`` (0: nothing changes). Two models
of the new run:

- ``replay``: the new run repeats the baseline's episodes (same seeds and initial states, a
  deterministic policy): each baseline success is lost with probability ``drop / rate``, and no
  failure turns into a success;
- ``fresh``: the new outcomes are drawn anew at ``rate - drop``, paired by index with the
  baseline's (a stochastic policy): discordant both ways even with no change.

Each gate is the gate's own functions on arrays: Tarone's family and Holm's steps
(``family``), McNemar (``stats.mcnemar_p``), and the sequential gate's e-processes, stopping
rule and final tests (``sequential``). Figures carry a Monte Carlo error: two standard errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from pytest_benchmarks.metrics.gate.family import holm_reject, tarone_mask
from pytest_benchmarks.metrics.gate.sequential import (
    BETA,
    SHARE,
    SequentialTest,
    early_threshold,
    final_alpha,
    plan_drops,
)
from pytest_benchmarks.metrics.stats import mcnemar_p

PAIRINGS = ("replay", "fresh")
GATES = ("fixed", "sequential")


@dataclass(frozen=True)
class Row:
    """One gate in one cell: the figures ``plan --json`` prints."""

    gate: str
    pairing: str
    #: The tasks' rate (None where each task has its own, from its snapshot).
    rate: float | None
    drop: float
    #: Sessions in which a task that did not drop was flagged.
    false_alarms: float
    #: Sessions in which the task that dropped was flagged (None with no drop).
    caught: float | None
    #: The share of the plan's episodes run.
    episodes: float
    sessions: int
    #: Two standard errors of ``false_alarms`` and ``caught``.
    mc_error: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _outcomes(
    rng: np.random.Generator, rates: np.ndarray, drops: np.ndarray, episodes: int,
    pairing: str,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Baseline and new outcomes, sessions x tasks x episodes."""
    shape = (*drops.shape, episodes)
    base = rng.random(shape) < rates[None, :, None]
    if pairing == "replay":
        loss = np.divide(drops, rates[None, :], out=np.zeros_like(drops), where=rates > 0)
        new = base & ~(rng.random(shape) < loss[:, :, None])
    else:
        new = rng.random(shape) < (rates[None, :] - drops)[:, :, None]
    return base, new


def fixed_gate(base: np.ndarray, new: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The fixed plan on every session: McNemar on the whole plan, Tarone's family, Holm.
    The tasks flagged, and the episodes run (all of them)."""
    diff = base.astype(np.int8) - new.astype(np.int8)
    lost, gained = (diff == 1).sum(-1), (diff == -1).sum(-1)
    chosen, _ = tarone_mask(mcnemar_p(base.sum(-1), 0), alpha)
    flagged = holm_reject(mcnemar_p(lost, gained), chosen, alpha, chosen.sum(-1))
    return flagged, np.full(lost.shape, base.shape[-1])


def sequential_gate(
    base: np.ndarray, new: np.ndarray, alpha: float, beta: float = BETA, share: float = SHARE,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The sequential gate on every session, pair by pair: REGRESSED early at ``share`` of
    alpha, HELD for futility against each task's smallest drop of interest, the final McNemar
    with Holm at the rest over the family fixed before the run (stopped tasks count with
    p = 1). The tasks flagged, and the episodes run."""
    sessions, tasks, episodes = base.shape
    diff = base.astype(np.int8) - new.astype(np.int8)
    chosen, k = tarone_mask(mcnemar_p(base.sum(-1), 0), final_alpha(alpha, share))
    size = np.where(chosen, chosen.sum(-1, keepdims=True), k[:, None])
    threshold = early_threshold(alpha, 1, share) * np.maximum(size, 1)
    delta = plan_drops(base.sum(-1), episodes, final_alpha(alpha, share) / np.maximum(size, 1))
    test = SequentialTest(threshold.ravel(), sessions * tasks, beta, delta.ravel(), chosen.ravel())
    for i in range(episodes):
        test.add(diff[:, :, i].ravel())
    state = test.state.reshape(sessions, tasks)
    early = state == 1
    ran = (state == 0) & chosen
    p = mcnemar_p(test.lost, test.gained).reshape(sessions, tasks)
    final = holm_reject(p, ran, final_alpha(alpha, share), chosen.sum(-1))
    return early | final, test.n.reshape(sessions, tasks)


def simulate(
    rates: Sequence[float],
    episodes: int,
    drops: Sequence[float],
    pairing: str,
    alpha: float,
    sessions: int,
    seed: int,
) -> list[Row]:
    """Both gates at each drop, on the same simulated sessions per drop (common draws)."""
    rate = np.asarray(rates, dtype=float)
    tasks = len(rate)
    dropped = np.arange(sessions) % tasks
    one = rate[0] if np.all(rate == rate[0]) else None
    rows = []
    for drop in drops:
        rng = np.random.default_rng([seed, round(drop * 1000), PAIRINGS.index(pairing)])
        per_task = np.zeros((sessions, tasks))
        per_task[np.arange(sessions), dropped] = np.minimum(drop, rate[dropped])
        base, new = _outcomes(rng, rate, per_task, episodes, pairing)
        for gate, judge in (("fixed", fixed_gate), ("sequential", sequential_gate)):
            flagged, ran = judge(base, new, alpha)
            others = flagged.copy()
            if drop > 0:
                others[np.arange(sessions), dropped] = False
            caught = float(flagged[np.arange(sessions), dropped].mean()) if drop > 0 else None
            false_alarms = float(others.any(axis=1).mean())
            error = max(_error(false_alarms, sessions), _error(caught or 0.0, sessions))
            rows.append(Row(
                gate, pairing, None if one is None else float(one), float(drop), false_alarms,
                caught, float(ran.mean() / episodes), sessions, error,
            ))  # fmt: skip
    return rows


def _error(p: float, sessions: int) -> float:
    """Two standard errors of a proportion estimated from ``sessions`` draws."""
    return 2 * float(np.sqrt(p * (1 - p) / sessions))
