"""Sequential gating's statistics: the e-values are what they claim (an independent numerical
integral; martingales at the null's boundary), decisions stop where they should, and the
simulation script's small version keeps its false alarms within alpha."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT
from scipy.integrate import quad

from pytest_benchmarks.metrics.sequential import (
    HELD,
    REGRESSED,
    UNDECIDED,
    HoldProcess,
    decide,
    family,
    max_regression_e,
    regression_e,
)


@pytest.mark.parametrize(("lost", "gained"), [(0, 0), (1, 0), (5, 0), (11, 0), (10, 3), (3, 10),
                                              (30, 20), (0, 12)])  # fmt: skip
def test_the_drop_e_value_is_the_mixture_it_claims(lost: int, gained: int):
    integral = 2 * quad(lambda t: (2 * t) ** lost * (2 * (1 - t)) ** gained, 0.5, 1)[0]
    assert float(regression_e(lost, gained)) == pytest.approx(integral, rel=1e-9)


def test_both_e_processes_are_fair_bets_at_their_nulls_boundary():
    # Drop: given a discordant pair, lost or gained with probability 1/2 each (a martingale).
    for lost, gained in [(0, 0), (3, 1), (7, 7), (12, 2)]:
        step = (regression_e(lost + 1, gained) + regression_e(lost, gained + 1)) / 2
        assert float(step) == pytest.approx(float(regression_e(lost, gained)), rel=1e-9)
    # Hold: with a drop of exactly delta (lost with probability delta, else unchanged), the
    # expected factor of the process's own next bet is 1; with a larger drop it is below 1.
    for delta in (0.1, 0.3):
        for history in ([], [0, 0, 1, -1, 0]):
            for drop, bound in [(delta, 1.0), (delta + 0.2, 1.0 - 1e-9)]:
                lost, same = HoldProcess(1, delta), HoldProcess(1, delta)
                for diff in history:
                    lost.update([diff])
                    same.update([diff])
                before = float(lost.value[0])
                step = drop * lost.update([1])[0] + (1 - drop) * same.update([0])[0]
                assert float(step) / before <= bound + 1e-12


def test_decisions_stop_at_the_first_crossing():
    same = decide([0] * 50, threshold=200, planned=50)
    assert (same.state, same.episodes) == (HELD, 5)  # 0.7 ** 5 < 0.2: no 30-point drop
    collapsed = decide([1] * 50, threshold=200, planned=50)
    assert (collapsed.state, collapsed.episodes, collapsed.lost) == (REGRESSED, 11, 11)
    assert decide([1] * 50, threshold=200, planned=50, can_fail=False).state != REGRESSED
    undecided = decide([1, -1] * 25, threshold=200, planned=50)
    assert (undecided.state, undecided.episodes) == (UNDECIDED, 50)
    assert decide([1, -1] * 3, threshold=200, planned=50).state == ""  # still running
    assert "after 11 episodes (11 lost, 0 gained" in collapsed.line()


def test_tarones_rule_for_e_values_leaves_out_tasks_that_cannot_reach_their_level():
    assert max_regression_e(10) < 200 <= max_regression_e(11)
    chosen, m = family({"a": max_regression_e(50), "b": max_regression_e(3)}, 0.05)
    assert (chosen, m) == ({"a"}, 1)
    many = {str(i): max_regression_e(50) for i in range(10)}
    assert family(many, 0.05) == (set(many), 10)


def test_the_simulations_small_version_keeps_false_alarms_within_alpha():
    """``benchmarks/perf/sequential_gate.py`` on 300 sessions per cell: every no-change false
    alarm rate within alpha (allowing three standard errors), and the table whole."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/perf/sequential_gate.py"), "--sessions", "300",
         "--batch", "1", "5"],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    rows = [line for line in done.stdout.splitlines() if re.match(r"\| \d+% \| \d+ \|", line)]
    assert len(rows) == 4 * 2 * 2, done.stdout  # rates x batches x models
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        sequential, fixed = (float(x.rstrip("%")) / 100 for x in cells[3].split(" / "))
        assert sequential <= bound and fixed <= bound, row
        assert 0 < float(cells[4].rstrip("%")) <= 100, row


def test_the_runs_stopping_rule_reads_the_index_prefix_as_episodes_finish():
    """``SequentialStop`` fed episodes out of index order, a few at a time (as slots end),
    decides where ``decide`` does on the same pairs, and never reads past a gap."""
    from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
    from pytest_benchmarks.core.tasks import TaskRef
    from pytest_benchmarks.metrics.sequential import SequentialStop, paired_diffs

    def episodes(outcomes: list[bool]) -> list[EpisodeRecord]:
        return [EpisodeRecord(i, 1000 + i, i, s, 9, 0.0, 0.0, 0.0) for i, s in enumerate(outcomes)]

    base = episodes([True] * 20)
    new = episodes([i % 2 != 0 for i in range(20)])  # every other episode lost
    stop = SequentialStop(base, range(20), threshold=40, can_fail=True)
    result = TaskResult(TaskRef("t", "t", "x", 0, "x"), planned=20)
    finishing = [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 17, 16, 19, 18]
    said = None
    for i in finishing:
        result.episodes.append(new[i])
        said = stop(result)
        read = paired_diffs(base, result.episodes, range(20))
        assert stop.read <= len(read)  # no pair beyond the finished prefix
        if said is not None:
            break
    expected = decide(paired_diffs(base, new, range(20)), 40, 20)
    assert said == expected.line() and expected.state == REGRESSED
