"""The regression gate's decision, as pure functions: the one place a verdict is reached
(``refusals``, ``verdicts``, ``lines``; everything is imported from here).

The pytest gate (``assert evaluate() == snapshot``) and ``pytest-benchmarks compare`` both call
it and print its lines:

- **pairing** first (``pair``): runs that differ in a setting the registry marks "refuse" are
  different experiments and are not compared (``check_comparable``); episodes whose initial
  simulator states differ (``unpaired``) are judged unpaired where the environments'
  fingerprints differ (the change named) and refused where they do not; "note" settings and
  another policy are said beside the verdict (``notes``);
- **the per-task test** (``compare``): McNemar on paired episodes, Fisher otherwise, or exact;
  with --benchmark-sequential, the sequential gate's decision (``compare_sequential``,
  ``sequential``: early REGRESSED on an e-value at a share of alpha, HELD for futility, the
  fixed paired test at the plan's end; the e-values themselves are ``evalues``);
- **the family**: Tarone's rule (``tarone``) leaves out the tasks whose test cannot reach its
  level whatever happens, decided from the baseline and the planned episodes only; Holm's
  step-down (``holm``) judges the others together at ``alpha`` (both on arrays in ``family``,
  which ``power`` uses to simulate the gate for ``pytest-benchmarks plan``);
- **the power report**: a task that cannot fail says so with the episodes it would need, and
  fails the gate with ``--benchmark-gate-power=fail`` (``fails``);
- **the lines**: each verdict marked by its outcome, and the closing count (``verdict_lines``,
  ``closing_line``).

The exact tests themselves are ``metrics.stats``; which settings must agree, ``core.comparability``.
"""

from pytest_benchmarks.metrics.gate.comparison import LABELS, Comparison
from pytest_benchmarks.metrics.gate.lines import (
    closing_line,
    environment_lines,
    summary,
    verdict_lines,
)
from pytest_benchmarks.metrics.gate.pairing import Pairing, Side, pair
from pytest_benchmarks.metrics.gate.refusals import (
    Incomparable,
    check_comparable,
    environment_changes,
    notes,
    unpaired,
)
from pytest_benchmarks.metrics.gate.verdicts import (
    compare,
    compare_sequential,
    fails,
    holm,
    judge,
    judge_families,
    tarone,
)

__all__ = [
    "LABELS",
    "Comparison",
    "Incomparable",
    "Pairing",
    "Side",
    "check_comparable",
    "closing_line",
    "compare",
    "compare_sequential",
    "environment_changes",
    "environment_lines",
    "fails",
    "holm",
    "judge",
    "judge_families",
    "notes",
    "pair",
    "summary",
    "tarone",
    "unpaired",
    "verdict_lines",
]
