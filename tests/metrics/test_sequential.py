"""The sequential gate's statistics: the e-values are what they claim (an independent numerical
integral; martingales at the null's boundary), decisions stop where they should, a task that
ran its plan undecided gets the fixed test at the rest of alpha, the family's array code is
Holm and Tarone, and ``plan`` keeps false alarms within alpha with the fixed plan's power."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from scipy.integrate import quad

from pytest_benchmarks.cli import main
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.metrics.gate import compare_sequential, holm, judge
from pytest_benchmarks.metrics.gate.evalues import HoldProcess, regression_e
from pytest_benchmarks.metrics.gate.family import holm_reject, tarone_mask
from pytest_benchmarks.metrics.gate.sequential import (
    HELD,
    REGRESSED,
    UNDECIDED,
    decide,
    early_threshold,
    final_alpha,
)


def episodes(outcomes: list[bool]) -> list[EpisodeRecord]:
    return [EpisodeRecord(i, 1000 + i, i, s, 9, 0.0, 0.0, 0.0) for i, s in enumerate(outcomes)]


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
    # 20 unchanged pairs: a 20-point drop would give them with probability 0.8 ** 20 < 0.02
    assert (same.state, same.episodes) == (HELD, 20)
    collapsed = decide([1] * 50, threshold=200, planned=50)
    assert (collapsed.state, collapsed.episodes, collapsed.lost) == (REGRESSED, 11, 11)
    assert decide([1] * 50, threshold=200, planned=50, can_fail=False).state != REGRESSED
    undecided = decide([1, -1] * 25, threshold=200, planned=50)
    assert (undecided.state, undecided.episodes) == (UNDECIDED, 50)
    assert decide([1, -1] * 3, threshold=200, planned=50).state == ""  # still running
    assert "after 11 episodes (11 lost, 0 gained" in collapsed.line()
    # Early stops cost 5% of alpha: Bonferroni over 10 tasks at 0.0025 each.
    assert early_threshold(0.05, 10) == pytest.approx(4000)
    assert final_alpha(0.05) == pytest.approx(0.0475)


def test_a_task_undecided_at_its_plans_end_gets_the_fixed_paired_test():
    """9 of 50 paired successes lost, spread out: no early stop (the drop e-value never reaches
    4000, the hold e-value is knocked back by each loss), so McNemar judges the whole plan
    at the rest of alpha (p = 0.5^9 = 0.002 < 0.0475 / 10); 5 lost is no regression."""
    base = episodes([True] * 50)
    order = range(50)
    for lost, regressed in ((9, True), (5, False)):
        new = episodes([i % 5 != 0 or i >= 5 * lost for i in range(50)])
        verdict = compare_sequential("t", base, new, order, 0.05, 10, can_fail=True)
        assert verdict.state == UNDECIDED and verdict.lost == lost
        assert verdict.regression is regressed
        assert verdict.threshold == pytest.approx(0.0475 / 10)
        assert "ran its plan (50 episodes" in verdict.line() and "McNemar" in verdict.line()


def test_holms_later_steps_judge_the_final_tests_with_stopped_tasks_counted():
    """Two tasks ran their plan with p 0.0039 (8 lost) and 0.0107 (9 lost, 1 gained); the
    others stopped (one HELD here). Holm over the family of 5 at 0.0475: 0.0039 < 0.0095, then
    0.0107 < 0.0119: both regressions, the second only at Holm's second step."""
    base = episodes([True] * 50)
    held = compare_sequential("h", base, episodes([True] * 50), range(50), 0.05, 5, True)
    assert held.state == HELD and not held.holm_tested
    a = compare_sequential("a", base, episodes([i % 6 != 0 or i >= 48 for i in range(50)]),
                           range(50), 0.05, 5, True)  # fmt: skip
    base_b = episodes([i != 49 for i in range(50)])
    b = compare_sequential("b", base_b, episodes([i % 5 != 0 or i >= 45 for i in range(50)]),
                           range(50), 0.05, 5, True)  # fmt: skip
    assert (a.lost, a.gained, b.lost, b.gained) == (8, 0, 9, 1)
    verdicts = [held, a, b]
    assert [v.regression for v in verdicts] == [False, True, False]  # 0.0107 >= 0.0095
    after = {v.task: v for v in holm(verdicts, 0.05, family=5)}
    assert after["a"].regression and after["a"].procedure == "Holm 1/5"
    assert after["b"].regression and after["h"] == held
    assert after["b"].threshold == pytest.approx(0.0475 / 4)


def test_the_family_arrays_are_tarones_rule_and_holms_steps():
    # K = 1 and 2 admit 3 tasks (0.02 < 0.025); K = 3 admits the two below 0.0167.
    chosen, k = tarone_mask([[1e-9, 1e-9, 0.02, 0.5]], 0.05)
    assert chosen.tolist() == [[True, True, False, False]] and k.tolist() == [3]
    p = np.array([[0.001, 0.04, 0.013, 0.02]])
    # Holm at 0.05 over 4: 0.001 < 0.0125, 0.013 < 0.0167, 0.02 < 0.025, 0.04 < 0.05: all
    # four; with a family of 6: 0.001 < 0.0083, then 0.013 >= 0.01: one.
    assert holm_reject(p, True, 0.05, 4).tolist() == [[True, True, True, True]]
    assert holm_reject(p, True, 0.05, 6).tolist() == [[True, False, False, False]]
    assert holm_reject(p, [[False, True, True, True]], 0.05, 4)[0, 0] == np.False_


def test_compare_judges_a_sequential_run_as_its_stopping_rule_did():
    base = episodes([True] * 50)
    pairs = {"same": (base, episodes([True] * 50)), "gone": (base, episodes([False] * 50))}
    verdicts = judge(pairs, 0.05, order=tuple(range(50)))
    assert verdicts["same"].state == HELD and not verdicts["same"].regression
    assert verdicts["gone"].state == REGRESSED and verdicts["gone"].regression


def plan(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["plan", *args])
    return status, out.getvalue(), err.getvalue()


def test_plan_keeps_false_alarms_within_alpha_and_the_fixed_plans_power():
    """``plan --json`` at 400 sessions a cell: no-change false alarms within alpha (three
    standard errors), the sequential gate's catches within the Monte Carlo error of the fixed
    plan's, and fewer episodes; the rows have the documented keys."""
    status, out, _ = plan("--sessions", "400", "--rate", "0.9", "--drop", "0,0.3", "--json")
    assert status == 0
    rows = json.loads(out)
    assert {tuple(sorted(r)) for r in rows} == {(
        "caught", "drop", "episodes", "false_alarms", "gate", "mc_error", "pairing", "rate",
        "sessions",
    )}  # fmt: skip
    assert len(rows) == 2 * 2 * 2  # pairings x drops x gates
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / 400)
    by = {(r["gate"], r["pairing"], r["drop"]): r for r in rows}
    for pairing in ("replay", "fresh"):
        for gate in ("fixed", "sequential"):
            assert by[gate, pairing, 0.0]["false_alarms"] <= bound
            assert by[gate, pairing, 0.0]["caught"] is None
        fixed, seq = by["fixed", pairing, 0.3], by["sequential", pairing, 0.3]
        assert seq["caught"] >= fixed["caught"] - 2 * fixed["mc_error"]
        assert seq["episodes"] < fixed["episodes"] == 1.0
    assert by["sequential", "replay", 0.0]["episodes"] <= 0.4


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--rate", "1.5"], "--rate: 1.5 is not a fraction in [0, 1]"),
        (["--rate", "0.5", "--drop", "0.6"], "--drop: 0.6 is larger than the rate 0.5"),
        (["--episodes", "0"], "--episodes: 0; a plan needs at least 1 episode"),
        (["--tasks", "0"], "--tasks: 0; a plan needs at least 1 task"),
        (["--sessions", "99"], "--sessions: 99; at least 100"),
        (["--pairing", "twice"], "--pairing: 'twice'; valid: replay, fresh"),
        (["--snapshots", "/nonexistent"], "--snapshots: /nonexistent: not a directory"),
    ],
)
def test_plan_refuses_bad_input_in_one_line(args: list[str], said: str):
    status, out, err = plan(*args)
    assert status == 2 and out == ""
    assert said in err and len(err.strip().splitlines()) == 1


def test_plan_reads_each_tasks_rate_from_its_snapshots(tmp_path):
    """``--snapshots DIR``: one task per snapshot at its own rate; a drop larger than a task's
    rate takes it to 0; the table names the rates' source."""
    from pytest_benchmarks.core.results import TaskResult
    from pytest_benchmarks.core.tasks import TaskRef
    from pytest_benchmarks.metrics.snapshots import document, dumps

    for i, wins in enumerate((50, 10)):
        result = TaskResult(TaskRef("x", "x", f"t{i}", i, "x"), planned=50)
        result.episodes.extend(episodes([j < wins for j in range(50)]))
        (tmp_path / f"t{i}.json").write_text(dumps(document(result, {"seed": 1000})))
    status, out, _ = plan("--snapshots", str(tmp_path), "--drop", "0,0.3", "--sessions", "200")
    assert status == 0, out
    assert "2 tasks x 50 episodes" in out and "| replay | snapshots | 30% |" in out


def test_the_runs_stopping_rule_reads_the_index_prefix_as_episodes_finish():
    """``SequentialStop`` fed episodes out of index order, a few at a time (as slots end),
    decides where ``decide`` does on the same pairs, and never reads past a gap."""
    from pytest_benchmarks.core.results import TaskResult
    from pytest_benchmarks.core.tasks import TaskRef
    from pytest_benchmarks.metrics.gate.sequential import SequentialStop, paired_diffs

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
