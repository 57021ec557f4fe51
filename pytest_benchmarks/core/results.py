"""Per-episode records, per-task results and their aggregates.

A TaskResult is what a task's tests read, what travels from an xdist worker to the controller
(as a plain dict on the test report) and what becomes one row of the metrics JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from statistics import NormalDist
from typing import Any

from pytest_benchmarks.core.tasks import TaskRef


@dataclass(frozen=True)
class EpisodeRecord:
    """The outcome of one episode."""

    index: int
    seed: int
    init_state: int
    success: bool
    steps: int
    sum_reward: float
    max_reward: float
    duration_s: float
    video: str | None = None
    #: Why the episode's video could not be written (its result stands).
    video_error: str | None = None
    #: The digest of the simulator's state after reset (``core.initial_state``): equal digests
    #: prove two runs' episodes paired; None where the env's state cannot be read.
    initial_digest: str | None = None
    #: The same state's sketch (``core.initial_state.sketch``: its size, then eight
    #: projections): how far a moved state moved. Not part of the outcome.
    initial_sketch: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.initial_sketch is not None and not isinstance(self.initial_sketch, tuple):
            # JSON gives a list back (the metrics file, a report's payload, the journal).
            object.__setattr__(self, "initial_sketch", tuple(self.initial_sketch))

    def to_row(self) -> dict[str, Any]:
        """The episode as the metrics JSON holds it: its fields (the sketch a list, as JSON
        reads it back) and ``sum``."""
        row = asdict(self)
        if self.initial_sketch is not None:
            row["initial_sketch"] = list(self.initial_sketch)
        return {**row, "sum": self.checksum()}

    def checksum(self) -> str:
        """A digest of the outcome (the metrics JSON's ``sum``): an edited or damaged record no
        longer matches it."""
        text = json.dumps(list(self.outcome()), separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def outcome(self) -> tuple[Any, ...]:
        """Everything but timing and artefacts: equal for equal runs of a deterministic policy.
        The initial state's digest only where there is one, so records written before it was
        kept still match their checksums."""
        start = (self.initial_digest,) if self.initial_digest is not None else ()
        return (
            self.index,
            self.seed,
            self.init_state,
            self.success,
            self.steps,
            self.sum_reward,
            self.max_reward,
            *start,
        )


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a success rate, in percent; (0, 100) when n is 0.

    The closed form, so that workers need not import scipy.stats (about half a second) just to
    summarise a task; the tests check it against scipy's ``binomtest(...).proportion_ci``.
    """
    if n == 0:
        return (0.0, 100.0)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half))


def mean(values: Iterable[float]) -> float | None:
    """The arithmetic mean, or None for no values (a task that ran no episode)."""
    values = list(values)
    return sum(values) / len(values) if values else None


def rate_text(successes: int, n: int) -> str:
    """``48/50 (96%, 87–99)``: count, rate and 95% Wilson interval."""
    low, high = wilson_interval(successes, n)
    pct = 100.0 * successes / n if n else 0.0
    return f"{successes}/{n} ({pct:.0f}%, {low:.0f}–{high:.0f})"


def progress_text(task: str, done: int, planned: int, successes: int, elapsed_s: float) -> str:
    """``metaworld/push-v3: 20/50 episodes, 18 successes, 31 s``: a running task's progress
    line (the plugin's prefixes the worker)."""
    return f"{task}: {done}/{planned} episodes, {successes} successes, {elapsed_s:.0f} s"


@dataclass
class TaskResult:
    """All planned episodes of one task (fewer when it failed), with timing and any error."""

    task: TaskRef
    episodes: list[EpisodeRecord] = field(default_factory=list)
    eval_s: float = 0.0
    batch_size: int = 1
    planned: int = 0
    error: str | None = None
    policy: dict[str, str | None] = field(default_factory=dict)
    #: The pytest command that reruns this task's episodes (add ``--benchmark-episode=I``).
    rerun: str | None = field(default=None, compare=False)
    #: The torch device a learned policy ran on (``cuda:1`` under xdist on several GPUs).
    device: str | None = field(default=None, compare=False)
    #: Why a sequential run ended the task before its plan (``HELD after 5 episodes ...``):
    #: its answer was clear, so it is complete, not partial.
    stopped: str | None = None

    def __eq__(self, other: object) -> bool:
        """Equal compared fields, also across subclasses (the gate's result type is one)."""
        if not isinstance(other, TaskResult):
            return NotImplemented
        return all(
            getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.compare
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def n_episodes(self) -> int:
        return len(self.episodes)

    @property
    def successes(self) -> int:
        return sum(e.success for e in self.episodes)

    @property
    def pc_success(self) -> float | None:
        return 100.0 * self.successes / self.n_episodes if self.episodes else None

    @property
    def ci95(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.n_episodes)

    @property
    def partial(self) -> bool:
        return self.n_episodes < self.planned and self.stopped is None

    def to_row(self) -> dict[str, Any]:
        """One row of the metrics JSON ``results`` list."""
        n = self.n_episodes
        return {
            "id": self.task.id,
            "env": self.task.env,
            "suite": self.task.suite,
            "task": self.task.task,
            "task_id": self.task.task_id,
            "description": self.task.description,
            "n_episodes": n,
            "planned_episodes": self.planned,
            "successes": self.successes,
            "pc_success": self.pc_success,
            "ci95": list(self.ci95),
            "avg_sum_reward": mean(e.sum_reward for e in self.episodes),
            "avg_max_reward": mean(e.max_reward for e in self.episodes),
            "avg_steps": mean(e.steps for e in self.episodes),
            "eval_s": self.eval_s,
            "eval_ep_s": self.eval_s / n if n else None,
            "batch_size": self.batch_size,
            "policy": self.policy,
            "device": self.device,
            "error": self.error,
            **({"stopped": self.stopped} if self.stopped is not None else {}),
            "episodes": [e.to_row() for e in self.episodes],
        }

    def worst_episodes(self, count: int = 3) -> list[int]:
        """Failed episodes with the lowest best reward first (all episodes if none failed)."""
        failed = [e for e in self.episodes if not e.success] or self.episodes
        ranked = sorted(failed, key=lambda e: (e.max_reward, e.index))[:count]
        return sorted(e.index for e in ranked)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TaskResult:
        name = row["id"].split("/", 1)[1]
        key = "" if name == row["task"] else name
        task = TaskRef(
            row["env"], row["suite"], row["task"], row["task_id"], row["description"], key
        )
        return cls(
            task=task,
            episodes=[
                EpisodeRecord(**{k: v for k, v in e.items() if k != "sum"}) for e in row["episodes"]
            ],
            eval_s=row["eval_s"],
            batch_size=row["batch_size"],
            planned=row["planned_episodes"],
            error=row["error"],
            policy=row["policy"],
            device=row.get("device"),
            stopped=row.get("stopped"),
        )
