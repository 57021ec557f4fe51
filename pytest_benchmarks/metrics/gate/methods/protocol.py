"""What every per-task test of the gate takes and gives: a ``Case`` (one task's baseline and
new episodes, the level and what the pipeline found), and a ``Comparison``. A test is one
module with a ``TaskTest``: whether it applies to a case, and its verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Protocol

from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.stats import episode_key, episodes_needed


@dataclass(frozen=True)
class Case:
    """One task to judge: its episodes, the level, and what the pipeline found."""

    task: str
    baseline: Sequence[EpisodeRecord]
    new: Sequence[EpisodeRecord]
    alpha: float = 0.05
    #: The tasks the level is shared by (Holm's first step: alpha / family).
    family: int = 1
    #: ``stat``, ``exact`` or ``off`` (``--benchmark-gate``).
    mode: str = "stat"
    #: Whether the task can fail (decided before the run: Tarone); None: from its own counts.
    can_fail: bool | None = None
    notes: tuple[str, ...] = ()
    #: The tasks compared in the session, for the episodes a blind task would need.
    session_tasks: int | None = None
    #: False where the pipeline found the episodes unpaired (``pairing.pair``).
    pair: bool = True
    #: A sequential run's plan (its episode indices in order); () for a fixed run.
    order: tuple[int, ...] = field(default=())

    @property
    def threshold(self) -> float:
        return self.alpha / max(1, self.family)

    @cached_property
    def shared(self) -> list[tuple[bool, bool]]:
        """(baseline, new) outcomes of the new episodes the baseline holds (same index, seed,
        initial state); none where the pipeline found them unpaired."""
        if not self.pair:
            return []
        by_key = {episode_key(e): e.success for e in self.baseline}
        return [(by_key[episode_key(e)], e.success) for e in self.new if episode_key(e) in by_key]

    @property
    def paired(self) -> bool:
        """Every new episode is one of the baseline's."""
        return bool(self.shared) and len(self.shared) == len(self.new)

    @property
    def lost(self) -> int:
        return sum(b and not n for b, n in self.shared)

    @property
    def gained(self) -> int:
        return sum(n and not b for b, n in self.shared)

    def verdict(
        self, test: str, p_value: float, p_up: float, min_p: float, regression: bool,
        possible: bool,
    ) -> Comparison:  # fmt: skip
        """The Comparison of a test that reached ``p_value`` (``p_up`` the other way)."""
        base_k = sum(e.success for e in self.baseline)
        rate = base_k / len(self.baseline) if self.baseline else 0.0
        blind_level = self.alpha / max(1, self.session_tasks or self.family)
        return Comparison(
            task=self.task,
            base_successes=base_k,
            base_n=len(self.baseline),
            new_successes=sum(e.success for e in self.new),
            new_n=len(self.new),
            test=test,
            p_value=p_value,
            threshold=self.threshold,
            regression=regression,
            improvement=not regression and self.mode == "stat" and p_up < self.threshold,
            lost=self.lost,
            gained=self.gained,
            min_p=min_p,
            can_fail=possible,
            needed=None if possible else episodes_needed(rate, blind_level, self.paired),
            notes=self.notes,
        )


class TaskTest(Protocol):
    """A per-task test: its name (``Comparison.test``), when it applies, its verdict."""

    name: ClassVar[str]

    def applies(self, case: Case) -> bool: ...

    def judge(self, case: Case) -> Comparison: ...
