"""``pytest-benchmarks plan``: what a planned gate can do before a run is paid for: its power,
false alarms and the share of the plan it runs, fixed and sequential side by side
(``gate.power``), for given rates or each task's rate from its snapshot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pytest_benchmarks.metrics.gate.power import PAIRINGS, Row, simulate
from pytest_benchmarks.metrics.snapshots import SnapshotFormatError, read

#: The fewest sessions a figure is worth printing from (Monte Carlo error about 10 points).
MIN_SESSIONS = 100


class PlanError(ValueError):
    """Bad input to ``plan``; the message is the one line shown."""


def fractions(text: str, flag: str) -> list[float]:
    """``0,0.1,0.2``: fractions in [0, 1]."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise PlanError(f"{flag}: {text!r} is not a comma-separated list of numbers") from None
    bad = [v for v in values if not 0.0 <= v <= 1.0]
    if not values or bad:
        raise PlanError(f"{flag}: {bad[0] if bad else text!r} is not a fraction in [0, 1]")
    return values


def snapshot_rates(root: Path) -> dict[str, float]:
    """Each snapshot's success rate under ``root``, by task id."""
    if not root.is_dir():
        raise PlanError(f"--snapshots: {root}: not a directory of snapshots")
    rates: dict[str, float] = {}
    for path in sorted(root.rglob("*.json")):
        try:
            stored = read(path.read_text())
        except (OSError, UnicodeDecodeError, SnapshotFormatError) as exc:
            raise PlanError(f"--snapshots: {path}: not a snapshot ({exc})") from None
        if stored.episodes:
            rates[stored.id] = sum(e.success for e in stored.episodes) / len(stored.episodes)
    if not rates:
        raise PlanError(f"--snapshots: {root}: no snapshot with episodes there")
    return rates


def run_plan(
    groups: Sequence[Sequence[float]],
    episodes: int,
    drops: Sequence[float],
    pairings: Sequence[str],
    alpha: float,
    sessions: int,
    seed: int,
    per_task: bool = False,
) -> list[Row]:
    """Every row, after checking the input (one ``PlanError`` line each). ``groups``: the
    tasks' rates of each session kind (one rate repeated, or each snapshot's: ``per_task``,
    where a drop larger than a task's rate takes it to 0)."""
    if not groups or not groups[0]:
        raise PlanError("--tasks: 0; a plan needs at least 1 task")
    if episodes < 1:
        raise PlanError(f"--episodes: {episodes}; a plan needs at least 1 episode")
    if sessions < MIN_SESSIONS:
        raise PlanError(f"--sessions: {sessions}; at least {MIN_SESSIONS} give a usable figure")
    if not 0.0 < alpha < 1.0:
        raise PlanError(f"--alpha: {alpha}; valid: a level in (0, 1)")
    for pairing in pairings:
        if pairing not in PAIRINGS:
            raise PlanError(f"--pairing: {pairing!r}; valid: {', '.join(PAIRINGS)}")
    if not per_task:
        for drop in drops:
            low = min(min(group) for group in groups)
            if drop > low + 1e-12:
                raise PlanError(f"--drop: {drop} is larger than the rate {low}")
    rows: list[Row] = []
    for pairing in pairings:
        for group in groups:
            rows += simulate(group, episodes, drops, pairing, alpha, sessions, seed)
    return rows


def table(rows: Sequence[Row], tasks: int, episodes: int, alpha: float) -> str:
    """The rows as a Markdown table, fixed and sequential side by side."""
    pairs: dict[tuple[str, float | None, float], dict[str, Row]] = {}
    for row in rows:
        pairs.setdefault((row.pairing, row.rate, row.drop), {})[row.gate] = row
    sessions = rows[0].sessions if rows else 0
    error = max((r.mc_error for r in rows), default=0.0)
    lines = [
        f"{tasks} tasks x {episodes} episodes, alpha {alpha:g}, {sessions} sessions a cell "
        f"(Monte Carlo error at most ±{error:.1%}); one task drops per session",
        "",
        "| pairing | rate | drop | false alarms fixed / seq | caught fixed / seq "
        "| episodes fixed / seq |",
        "|---|---|---|---|---|---|",
    ]
    for (pairing, rate, drop), by in pairs.items():
        fixed, seq = by["fixed"], by["sequential"]
        caught = "-" if fixed.caught is None else f"{fixed.caught:.1%} / {seq.caught:.1%}"
        rate_text = "snapshots" if rate is None else f"{rate:.0%}"
        lines.append(
            f"| {pairing} | {rate_text} | {drop:.0%} | {fixed.false_alarms:.2%} / "
            f"{seq.false_alarms:.2%} | {caught} | {fixed.episodes:.0%} / {seq.episodes:.0%} |"
        )
    return "\n".join(lines)


def as_json(rows: Sequence[Row]) -> str:
    return json.dumps([row.as_dict() for row in rows], indent=1)
