"""A verdict on one task: what every per-task test gives and every line prints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_benchmarks.core.results import rate_text
from pytest_benchmarks.metrics.gate.sequential import UNDECIDED

#: How the gate's lines mark each verdict (``Comparison.verdict``); the rest are held.
LABELS = {"regression": "REGRESSION", "cannot fail": "cannot fail", "improvement": "improved"}


@dataclass(frozen=True)
class Comparison:
    """The verdict on one task: counts, the test used, its p-value and the threshold."""

    task: str
    base_successes: int
    base_n: int
    new_successes: int
    new_n: int
    test: str
    p_value: float
    threshold: float
    regression: bool
    improvement: bool
    #: Paired episodes that went from success to failure, and the reverse.
    lost: int = 0
    gained: int = 0
    #: The smallest p-value this test can reach with these counts.
    min_p: float = 0.0
    #: Whether any outcome of the new run could fail the gate (False: it cannot detect a drop).
    can_fail: bool = True
    #: Episodes per run at which it could, for the baseline's rate (None: none suffice).
    needed: int | None = None
    #: Why baseline and run are different experiments (another policy, other settings).
    notes: tuple[str, ...] = ()
    #: How the threshold was reached: "" (one task compared) or Holm's step, "Holm 2/5".
    procedure: str = ""
    #: A sequential gate's decision (``sequential.Decision.line``): how many episodes it read
    #: and why it stopped.
    decision: str = ""
    #: The sequential gate's state (REGRESSED, HELD, or UNDECIDED: ran its plan, judged by
    #: the fixed paired test); "" for the fixed gate.
    state: str = ""
    #: The share of alpha Holm's steps judge this task at (the sequential gate's final tests
    #: get what its early stops left).
    share: float = 1.0

    @property
    def holm_tested(self) -> bool:
        """Whether Holm's steps judge this verdict: a fixed test of a task that can fail, or
        the final fixed test of a sequential task that ran its plan."""
        fixed = self.test in ("McNemar", "Fisher") or self.state == UNDECIDED
        return self.can_fail and fixed

    @property
    def verdict(self) -> str:
        if self.regression:
            return "regression"
        if self.improvement:
            return "improvement"
        if not self.can_fail:
            return "cannot fail"
        return "no regression" if self.test == "exact" else "no significant change"

    def line(self) -> str:
        """One line a person reads at a glance."""
        head = (
            f"{self.task}: {rate_text(self.base_successes, self.base_n)} → "
            f"{rate_text(self.new_successes, self.new_n)}"
        )
        tail = "".join(f"; {note}" for note in self.notes)
        if self.test == "sequential" and self.state != UNDECIDED:
            return f"{head}, sequential: {self.decision} → {self.verdict}{tail}"
        if self.test == "exact":
            body = f"{self.lost} episodes lost, {self.gained} gained → {self.verdict}"
            return f"{head}, {body}{tail}"
        if self.verdict == "cannot fail":
            need = (
                f"needs >= {self.needed} episodes at {self.base_rate:.0%}"
                if self.needed
                else "no episode count suffices at a 0% baseline"
            )
            return (
                f"{head}, {self.test} cannot detect any drop at this size (smallest p "
                f"{self.min_p:.2g} >= {self.threshold:.2g}; {need}) → cannot fail{tail}"
            )
        sign = "<" if self.p_value < self.threshold else ">="
        level = f"{self.threshold:.2g}" + (f" ({self.procedure})" if self.procedure else "")
        test = f"sequential: {self.decision}, McNemar" if self.state == UNDECIDED else self.test
        return f"{head}, {test} p={self.p_value:.2g} {sign} {level} → {self.verdict}{tail}"

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Comparison:
        """A verdict from its fields as ``dataclasses.asdict`` gave them (a report's payload)."""
        return cls(**{**data, "notes": tuple(data.get("notes", ()))})

    @property
    def label(self) -> str:
        """The verdict as the gate's lines mark it: REGRESSION, cannot fail, improved, held."""
        return LABELS.get(self.verdict, "held")

    @property
    def base_rate(self) -> float:
        return self.base_successes / self.base_n if self.base_n else 0.0
