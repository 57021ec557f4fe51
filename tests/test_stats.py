"""The gate's statistics: exact one-sided tests, their choice, and their honesty in simulation."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.policy_spec import PolicySpecError, parse_spec
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.metrics.stats import compare, fisher_lower, mcnemar_lower
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
    assert better.improvement and not better.regression


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


@pytest.mark.parametrize("paired", [True, False])
def test_session_false_alarm_rate_stays_within_alpha(paired):
    """10 tasks x 50 episodes with unchanged true rates: how often does any task fail the gate?"""
    rng = np.random.default_rng(7)
    alpha, tasks, n, sessions = 0.05, 10, 50, 400
    rates = np.linspace(0.5, 0.95, tasks)
    alarms = 0
    for _ in range(sessions):
        flagged = False
        for rate in rates:
            base = rng.random(n) < rate
            new = rng.random(n) < rate  # same true rate, fresh outcomes
            new_eps = episodes(new, 0 if paired else n)
            verdict = compare("t/x", episodes(base), new_eps, alpha=alpha, tasks_compared=tasks)
            flagged |= verdict.regression
        alarms += flagged
    rate = alarms / sessions
    standard_error = (alpha * (1 - alpha) / sessions) ** 0.5
    assert rate <= alpha + 3 * standard_error, rate


def test_noise_policy_spec():
    assert parse_spec("scripted+noise:0.5") == ("scripted+noise", "0.5")
    for bad in ("scripted+noise", "scripted+noise:1.5", "scripted+noise:x"):
        with pytest.raises(PolicySpecError, match="needs a fraction of steps in"):
            parse_spec(bad)


def _run(spec: str, seed: int, batch: int = 1, episodes_: int = 12, task: str = "push-v3"):
    benchmark = catalog.get("metaworld")
    ref = benchmark.select([task])[0]
    config = EnvConfig(ref, 200, seed)
    env = LazyVectorEnv(config, batch, True)
    try:
        policy = make_policy(spec, benchmark, config, batch)
        return evaluate_task(env, policy, benchmark.processors(config), seed, range(episodes_),
                             lambda r: None)  # fmt: skip
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
