"""The gate's statistics: exact one-sided tests, their choice, and their honesty in simulation."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.policy_spec import PolicySpec, PolicySpecError
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.metrics.gate import compare, judge, tarone
from pytest_benchmarks.metrics.stats import (
    episodes_needed,
    fisher_lower,
    mcnemar_lower,
    min_p_value,
)
from pytest_benchmarks.policies import make_policy


def episodes(outcomes, seed_offset=0):
    return [EpisodeRecord(i, 1000 + i + seed_offset, i % 50, bool(s), 10, 0.0, 0.0, 0.0)
            for i, s in enumerate(outcomes)]  # fmt: skip


def test_exact_p_values():
    assert mcnemar_lower(5, 0) == pytest.approx(0.5**5)
    assert mcnemar_lower(0, 0) == 1.0
    assert mcnemar_lower(3, 3) > 0.5
    # Hypergeometric tail: all 5 failures among the new run's 10 episodes.
    assert fisher_lower(10, 10, 5, 10) == pytest.approx(0.0162538, rel=1e-4)
    assert fisher_lower(5, 10, 10, 10) == 1.0


def test_paired_episodes_use_mcnemar_and_others_fisher():
    base = episodes([1] * 48 + [0] * 2)
    drop = episodes([1] * 31 + [0] * 19)
    paired = compare("metaworld/push-v3", base, drop, alpha=0.01)
    assert (paired.test, paired.lost, paired.gained, paired.regression) == ("McNemar", 17, 0, True)
    assert paired.line() == (
        "metaworld/push-v3: 48/50 (96%, 87–99) → 31/50 (62%, 48–74), "
        "McNemar p=7.6e-06 < 0.01 → regression"
    )
    unpaired = compare("metaworld/push-v3", base, episodes([1] * 31 + [0] * 19, 100), alpha=0.01)
    assert unpaired.test == "Fisher" and unpaired.regression
    same = compare("metaworld/push-v3", base, base)
    assert not same.regression and not same.improvement and same.p_value == 1.0
    better = compare("t/x", episodes([1] * 30 + [0] * 20), base)
    assert better.improvement and not better.regression and better.verdict == "improvement"


def test_correction_exact_and_off_modes():
    base = episodes([1] * 20)
    small_drop = episodes([1] * 15 + [0] * 5)  # p = 1/32 ~ 0.031
    assert compare("t/x", base, small_drop, alpha=0.05).regression
    judged = compare("t/x", base, small_drop, alpha=0.05, tasks_compared=10)
    assert judged.threshold == pytest.approx(0.005) and not judged.regression
    one_lost = episodes([1] * 19 + [0])
    assert compare("t/x", base, one_lost, mode="exact").regression
    assert not compare("t/x", base, one_lost, mode="stat").regression
    assert not compare("t/x", base, episodes([0] * 20), mode="off").regression
    with pytest.raises(ValueError, match="unknown gate mode 'strict'; valid: stat, exact, off"):
        compare("t/x", base, base, mode="strict")
    # Exact comparison of different episodes (another seed) would pass anything: refused.
    with pytest.raises(ValueError, match=r"20 of 20 new episodes .* are not in the baseline"):
        compare("t/x", base, episodes([0] * 20, seed_offset=100), mode="exact")


def test_smallest_reachable_p_and_the_episodes_a_gate_needs():
    # Paired: only the baseline's successes can be lost; 2/2 -> 0/2 reaches 1/4 at best.
    assert min_p_value(2, 2, 2, paired=True) == pytest.approx(0.25)
    assert min_p_value(10, 10, 10, paired=False) == pytest.approx(fisher_lower(10, 10, 0, 10))
    assert min_p_value(0, 10, 10, paired=True) == 1.0
    # 0.5**10 < 0.05/50 <= 0.5**9: a 100% task needs 10 paired episodes in a 50-task session.
    assert episodes_needed(1.0, 0.05 / 50, paired=True) == 10
    assert episodes_needed(0.5, 0.05 / 50, paired=True) == 20
    assert episodes_needed(0.0, 0.05, paired=True) is None
    small = compare("t/x", episodes([1, 1]), episodes([0, 0]))
    assert (small.can_fail, small.regression, small.verdict, small.needed) == (
        False, False, "cannot fail", 5)  # fmt: skip
    assert "cannot detect any drop at this size (smallest p 0.25 >= 0.05" in small.line()


def test_tarone_leaves_out_the_tasks_that_cannot_fail():
    # 50 tasks at 10/10 and one episode each in the new run: none can fail.
    blind = {f"t/{i}": 0.5 for i in range(50)}
    assert tarone(blind, 0.05)[0] == set()
    # One informative task among blind ones is judged alone, at the full level.
    assert tarone({"a": 0.5**10, **blind}, 0.05) == ({"a"}, 1)
    assert tarone({"a": 0.5**10, "b": 0.5**5, "c": 0.5}, 0.05) == ({"a"}, 2)


def test_holm_steps_down_where_bonferroni_stops():
    base = episodes([1] * 12)
    pairs = {
        "t/a": (base, episodes([0] * 12)),  # p = 1/4096
        "t/b": (base, episodes([0] * 5 + [1] * 7)),  # p = 1/32: above 0.05/2, below 0.05/1
        "t/c": (episodes([1] * 2), episodes([0] * 2)),  # p >= 1/4: cannot fail, left out
    }
    verdicts = judge(pairs, alpha=0.05)
    assert [verdicts[t].regression for t in ("t/a", "t/b", "t/c")] == [True, True, False]
    assert verdicts["t/b"].threshold == pytest.approx(0.05) and verdicts["t/c"].verdict == (
        "cannot fail")  # fmt: skip
    assert "< 0.05 (Holm 2/2) → regression" in verdicts["t/b"].line()
    # Bonferroni's level for b (0.05 / 2) would have passed it.
    assert not compare("t/b", *pairs["t/b"], alpha=0.05, tasks_compared=2).regression
    # Holm stops at the first p-value above its step: nothing after it fails.
    pairs["t/a"] = (base, episodes([0] * 4 + [1] * 8))  # p = 1/16
    assert not any(v.regression for v in judge(pairs, alpha=0.05).values())


def test_improvement_only_when_significant():
    base = episodes([1] * 6 + [0] * 6)
    assert compare("t/x", base, episodes([1] * 12)).verdict == "improvement"  # p_up = 1/64
    one_more = compare("t/x", base, episodes([1] * 7 + [0] * 5))
    assert not one_more.improvement and one_more.verdict == "no significant change"


def _sessions(paired: bool, drop: float, rng: np.random.Generator, sessions: int = 300) -> float:
    """The fraction of sessions of 10 tasks x 50 episodes in which the gate fails any task;
    the first task's true rate falls by ``drop`` (0: nothing changes)."""
    alpha, tasks, n = 0.05, 10, 50
    rates = np.linspace(0.5, 0.95, tasks)
    alarms = 0
    for _ in range(sessions):
        pairs = {}
        for i, rate in enumerate(rates):
            base = rng.random(n) < rate
            if paired:  # each baseline success lost with probability drop / rate, or re-drawn
                new = base & (rng.random(n) >= drop / rate) if i == 0 and drop else None
                new = new if new is not None else rng.random(n) < rate
            else:
                new = rng.random(n) < rate - (drop if i == 0 else 0.0)
            pairs[f"t/{i}"] = (episodes(base), episodes(new, 0 if paired else n))
        alarms += any(v.regression for v in judge(pairs, alpha).values())
    return alarms / sessions


@pytest.mark.parametrize("paired", [True, False])
def test_session_false_alarm_rate_stays_within_alpha_and_real_drops_are_caught(paired):
    """Unchanged rates: the session-wide false-alarm rate stays within alpha (three standard
    errors of 300 sessions). A 30-point drop on one of the 10 tasks: caught at least as often
    as docs/statistics.md's power table says, less a margin; a gate that never fires fails."""
    rng = np.random.default_rng(7)
    false_alarms = _sessions(paired, 0.0, rng)
    assert false_alarms <= 0.05 + 3 * (0.05 * 0.95 / 300) ** 0.5, false_alarms
    caught = _sessions(paired, 0.3, rng)
    assert caught >= (0.9 if paired else 0.5), caught


def test_noise_policy_spec():
    spec = PolicySpec.parse("scripted+noise:0.5")
    assert (spec.kind, spec.argument, str(spec)) == ("scripted+noise", "0.5", "scripted+noise:0.5")
    assert spec.expert_based and not spec.is_lerobot and not spec.local
    for bad in ("scripted+noise", "scripted+noise:1.5", "scripted+noise:x"):
        with pytest.raises(PolicySpecError, match="needs a fraction of steps in"):
            PolicySpec.parse(bad)


def _run(spec: str, seed: int, batch: int = 1, episodes_: int = 12, task: str = "push-v3"):
    benchmark = catalog.get("metaworld")
    ref = benchmark.select([task])[0]
    config = EnvConfig(ref, 200, seed)
    env = LazyVectorEnv(benchmark, config, batch, sync=True)
    try:
        policy = make_policy(spec, benchmark, config, batch)
        return evaluate_task(env, policy, processors=benchmark.processors(config), seed=seed,
                             episodes=range(episodes_), record=lambda r: None)  # fmt: skip
    finally:
        env.close()


def test_degraded_expert_fails_the_gate_and_a_new_seed_passes():
    baseline = _run("scripted", 1000)
    degraded = _run("scripted+noise:0.9", 1000)
    reseeded = _run("scripted", 2000)
    assert baseline.successes >= 11
    verdict = compare("metaworld/push-v3", baseline.episodes, degraded.episodes)
    assert verdict.test == "McNemar" and verdict.regression, verdict.line()
    verdict = compare("metaworld/push-v3", baseline.episodes, reseeded.episodes)
    assert verdict.test == "Fisher" and not verdict.regression, verdict.line()
    # The degraded policy is reproducible per episode, whatever the batch size.
    again = _run("scripted+noise:0.9", 1000, batch=3)
    assert [e.outcome() for e in again.episodes] == [e.outcome() for e in degraded.episodes]
    assert degraded.policy["id"].endswith("+noise:0.9")
