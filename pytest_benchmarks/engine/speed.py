"""Speed as a measured quantity: a policy's latency per batch and an env's step rate.

Both time through pytest-benchmark's ``benchmark`` fixture (passed in as ``timer``), so its
``--benchmark-autosave``, ``--benchmark-compare`` and ``--benchmark-compare-fail`` store, compare
and gate them like any other benchmark. Nothing here imports pytest-benchmark: ``timer`` is any
object with its ``pedantic`` interface (``Timer``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.vector import LazyVectorEnv, make_vector_env, reset_slots

#: Steps the policy acts in the env before its latency is timed (caches, lazy inits, queues).
WARMUP_STEPS = 10

#: Calls timed to size the number of rounds (``--benchmark-max-time`` / their mean).
PROBE_STEPS = 5

#: At most this many rounds, however fast the call.
MAX_ROUNDS = 10_000


class Timer(Protocol):
    """What is used of pytest-benchmark's ``benchmark`` fixture."""

    group: str | None
    extra_info: dict[str, Any]

    def pedantic(
        self,
        target: Callable[..., Any],
        setup: Callable[[], Any] | None = ...,
        rounds: int = ...,
        warmup_rounds: int = ...,
        iterations: int = ...,
    ) -> Any: ...


def time_policy(
    timer: Timer,
    vector_env: LazyVectorEnv,
    policy: Policy,
    *,
    processors: EnvProcessors,
    seed: int,
    max_time_s: float,
    min_rounds: int,
) -> None:
    """Time ``policy.act`` on one batch of the task's own observations: one inference.

    The batch comes from the task's planned episodes (its first ``num_envs``, seeded as in a
    run), after the policy has acted ``WARMUP_STEPS`` steps in them, so first-call costs are
    past. Before each timed call the policy is reset for every slot (not timed), so a chunking
    policy computes a whole chunk each time instead of popping its queue. The rounds fill about
    ``max_time_s``, at least ``min_rounds``.
    """
    task = vector_env.config.task
    n = vector_env.num_envs
    plan = plan_episodes(vector_env.benchmark, task, seed, range(n))
    slots, seeds = list(range(n)), [s.seed for s in plan]
    vector_env.skip_unread_cameras(policy)  # as a run
    env = vector_env.get()
    obs, _ = reset_slots(env, {s.index: (s.seed, s.init_state, s.index) for s in plan})
    policy.reset(slots, seeds)
    batch = processors(obs)
    for _ in range(WARMUP_STEPS):
        obs, _, terminated, truncated, _ = env.step(policy.act(batch))
        if (terminated | truncated).any():
            break  # a slot ended: keep the last batch of live episodes
        batch = processors(obs)

    def setup() -> None:
        policy.reset(slots, seeds)

    def act() -> None:
        policy.act(batch)

    rounds = _rounds(setup, act, max_time_s, min_rounds)
    timer.group = f"policy latency: {task.env}"
    timer.extra_info.update(task=task.id, batch_size=n, unit="seconds per batch")
    timer.pedantic(act, setup=setup, rounds=rounds, warmup_rounds=0, iterations=1)
    _rate(timer, "batches_per_s")


def _rounds(
    setup: Callable[[], None], call: Callable[[], None], max_time_s: float, min_rounds: int
) -> int:
    """Rounds of ``call`` that fill about ``max_time_s``, from ``PROBE_STEPS`` untimed-setup
    probes; at least ``min_rounds``, at most ``MAX_ROUNDS``."""
    timed = 0.0
    for _ in range(PROBE_STEPS):
        setup()
        began = time.perf_counter()
        call()
        timed += time.perf_counter() - began
    per_call = timed / PROBE_STEPS
    return max(min_rounds, min(MAX_ROUNDS, int(max_time_s / max(per_call, 1e-9))))


def time_env_step(
    timer: Timer,
    benchmark: Benchmark,
    config: EnvConfig,
    *,
    seed: int,
    max_time_s: float,
    min_rounds: int,
) -> None:
    """Time one step of the task's env, as the rollout builds it (one slot, in this process),
    under uniform random actions seeded by ``seed``.

    Resets happen between timed rounds, never in them. The rounds fill about ``max_time_s``
    (pytest-benchmark's ``--benchmark-max-time``), at least ``min_rounds``.
    """
    task = config.task
    start = plan_episodes(benchmark, task, seed, [0])[0]
    env = make_vector_env(benchmark, config, 1, sync=True)
    space = env.single_action_space
    space.seed(seed)
    ended = [True]

    def setup() -> None:
        if ended[0]:
            reset_slots(env, {0: (start.seed, start.init_state, start.index)})
            ended[0] = False

    def step() -> None:
        action = np.asarray(space.sample(), dtype=space.dtype)[None]
        _, _, terminated, truncated, _ = env.step(action)
        ended[0] = bool(terminated[0] or truncated[0])

    try:
        rounds = _rounds(setup, step, max_time_s, min_rounds)  # the first setup builds the env
        timer.group = f"env step: {task.env}"
        timer.extra_info.update(task=task.id, obs=config.obs, unit="seconds per step")
        timer.pedantic(step, setup=setup, rounds=rounds, warmup_rounds=0, iterations=1)
        _rate(timer, "steps_per_s")
    finally:
        env.close()


def _rate(timer: Timer, key: str) -> None:
    """The median as a rate in ``extra_info`` (absent when timing is disabled, as under xdist)."""
    stats = getattr(getattr(timer, "stats", None), "stats", None)
    median = getattr(stats, "median", None)
    if median:
        timer.extra_info[key] = round(1 / median, 3)
