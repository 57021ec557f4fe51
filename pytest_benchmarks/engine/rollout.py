"""The batched episode loop: planned episodes flow through the slots of one vector env.

A slot whose episode ends takes the next planned episode at once, so nothing waits for the
slowest episode of a wave. The processed observations are checked against the declared features
(shapes and dtypes when an episode starts, NaN and inf on every step) and the policy's actions
against the action space on every step, so a broken pipeline fails loudly instead of producing
a quiet 0%.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from pytest_benchmarks.core.plan import EpisodeSpec
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.engine.recording import EpisodeRecorder
from pytest_benchmarks.engine.vector import reset_slots

#: (episode index, step number from 1, action, reward, success flag) of one step.
StepTrace = Callable[[int, int, np.ndarray, float, bool], None]


class ActionError(ValueError):
    """A policy produced actions the env cannot take."""


class ActionCheck:
    """Per-step action validation, with the expected shape and bounds worked out once."""

    def __init__(self, space: gym.spaces.Box, num_envs: int) -> None:
        self.shape = (num_envs, *space.shape)
        self.low, self.high = space.low, space.high
        # Within finite bounds an action is finite too, so no separate NaN/inf pass is needed.
        self.bounded = bool(np.isfinite(space.low).all() and np.isfinite(space.high).all())
        # Uniform bounds (the common case) are checked with one min and one max.
        self.uniform = bool((space.low == space.low.flat[0]).all()) and bool(
            (space.high == space.high.flat[0]).all()
        )

    def __call__(self, actions: np.ndarray) -> str | None:
        """Why a batch of actions is unusable, or None."""
        if not isinstance(actions, np.ndarray):
            return (
                f"actions are a {type(actions).__name__}, expected a numpy array of shape "
                f"{list(self.shape)}"
            )
        if actions.dtype.kind not in "fiu":  # complex, bool, strings, objects
            return f"actions have dtype {actions.dtype}, expected real numbers (float)"
        if actions.shape != self.shape:
            return f"actions have shape {list(np.shape(actions))}, expected {list(self.shape)}"
        if not self.bounded and not math.isfinite(actions.sum()):
            return "actions hold NaN or inf"
        if self.uniform:
            # NaN fails both comparisons, inf one of them: one pass each for the common case.
            inside = actions.min() >= self.low.flat[0] and actions.max() <= self.high.flat[0]
        else:
            inside = bool(((actions >= self.low) & (actions <= self.high)).all())
        if inside:
            return None
        if not np.isfinite(actions).all():
            return "actions hold NaN or inf"
        return f"actions leave the action space [{self.low.min()}, {self.high.max()}]"


class RewardError(ValueError):
    """An env returned a reward the metrics cannot hold (NaN or infinity)."""


def run_episodes(
    env: VectorEnv,
    policy: Policy,
    processors: EnvProcessors,
    plan: Sequence[EpisodeSpec],
    on_episode: Callable[[EpisodeRecord], None],
    trace: StepTrace | None = None,
    recorder: EpisodeRecorder | None = None,
) -> None:
    """Run every planned episode; ``on_episode`` receives each record as it ends.

    Records arrive in completion order; a raised error leaves the finished ones delivered.
    ``trace``, when given, sees every step of every running episode; ``recorder`` records
    every frame of them.
    """
    n = env.num_envs
    if len(plan) < n:
        raise ValueError(f"{len(plan)} episodes cannot fill {n} env slots")
    assert isinstance(env.single_action_space, gym.spaces.Box), env.single_action_space
    check_actions = ActionCheck(env.single_action_space, n)
    pending = deque(plan)
    running: list[EpisodeSpec | None] = [None] * n
    # Per-slot tallies as Python lists: a step's bookkeeping costs a few list operations
    # rather than a numpy call per tally (each a microsecond at this size).
    sum_reward = [0.0] * n
    max_reward = [-math.inf] * n
    steps = [0] * n
    succeeded = [False] * n
    started = [0.0] * n
    fresh = False  # episodes began in the last reset (``start``)

    def start(slots: Sequence[int]) -> object:
        """Start the next planned episodes in ``slots``; park the slots left without one."""
        nonlocal fresh
        specs: dict[int, tuple[int, int, int] | None] = {}
        for slot in slots:
            spec = pending.popleft() if pending else None
            running[slot] = spec
            specs[slot] = None if spec is None else (spec.seed, spec.init_state, spec.index)
            active[slot] = spec is not None
        obs, _ = reset_slots(env, specs)
        begun = [slot for slot, start in specs.items() if start is not None]
        if begun:
            policy.reset(begun, [specs[slot][0] for slot in begun])  # type: ignore[index]
            if recorder is not None:
                recorder.begin(begun)
        fresh = True
        now = time.perf_counter()
        for slot in begun:
            sum_reward[slot], max_reward[slot] = 0.0, -math.inf
            steps[slot], succeeded[slot] = 0, False
            started[slot] = now
        return obs

    active = [False] * n  # a list: any() on it is cheaper than on an array, every step
    fresh = True  # an episode started: check the observations' shapes and dtypes too
    obs = start(range(n))
    while any(active):
        batch = processors(obs)
        processors.check(batch, n, layout=fresh)
        fresh = False
        actions = policy.act(batch)
        problem = check_actions(actions)
        if problem:
            where = ", ".join(
                f"episode {s.index} step {steps[i]}" for i, s in enumerate(running) if s
            )
            who = policy.identity()
            name = ":".join(str(who.get(k)) for k in ("source", "id") if who.get(k))
            raise ActionError(f"{problem} (policy {name}; {where})")
        obs, rewards, terminated, truncated, info = env.step(actions)
        step_rewards = rewards.tolist()
        if not math.isfinite(sum(step_rewards)):
            bad = [
                f"{step_rewards[i]} (episode {s.index} step {steps[i] + 1})"
                for i, s in enumerate(running)
                if s and not math.isfinite(step_rewards[i])
            ]
            raise RewardError("the env returned a non-finite reward: " + ", ".join(bad))
        # Parked slots report reward 0, no success and no end; their tallies are reset before
        # they run another episode, so nothing here needs masking.
        wins = info["success"].tolist()
        for slot, reward in enumerate(step_rewards):
            sum_reward[slot] += reward
            if reward > max_reward[slot]:
                max_reward[slot] = reward
            steps[slot] += 1
            succeeded[slot] = succeeded[slot] or wins[slot]
        if recorder is not None:
            live = [slot for slot, spec in enumerate(running) if spec is not None and active[slot]]
            recorder.add(batch, actions, rewards, terminated | truncated, info["success"], live)
        if trace is not None:
            for slot, spec in enumerate(running):
                if spec is not None and active[slot]:
                    trace(spec.index, int(steps[slot]), actions[slot], float(rewards[slot]),
                          bool(info["success"][slot]))  # fmt: skip
        ended = [slot for slot, end in enumerate((terminated | truncated).tolist()) if end]
        if not ended:
            continue
        now = time.perf_counter()
        for slot in ended:
            spec = running[slot]
            assert spec is not None
            record = EpisodeRecord(
                index=spec.index,
                seed=spec.seed,
                init_state=spec.init_state,
                success=bool(succeeded[slot]),
                steps=int(steps[slot]),
                sum_reward=float(sum_reward[slot]),
                max_reward=float(max_reward[slot]),
                duration_s=now - started[slot],
            )
            if recorder is not None:
                recorder.end(slot, record)
            on_episode(record)
            active[slot] = False
        if any(active) or pending:
            obs = start(ended)
