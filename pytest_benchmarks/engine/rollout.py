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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from pytest_benchmarks.core import initial_state
from pytest_benchmarks.core.plan import EpisodeSpec
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.engine.exits import policy_call
from pytest_benchmarks.engine.recording import EpisodeRecorder
from pytest_benchmarks.engine.tallies import Tallies
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
    stop: Callable[[], bool] | None = None,
) -> None:
    """Run every planned episode; ``on_episode`` receives each record as it ends. Once
    ``stop`` (asked after episodes end) says so, no more episodes start: the running ones
    finish.

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
    slots = Tallies(n)
    obs = start_episodes(env, policy, pending, slots, range(n), recorder)
    fresh = True  # an episode started: check the observations' shapes and dtypes too
    while any(slots.active):
        batch = processors(obs)
        processors.check(batch, n, layout=fresh)
        fresh = False
        actions = policy_call(policy.act, batch)
        problem = check_actions(actions)
        if problem:
            raise ActionError(f"{problem} (policy {policy_name(policy)}; {slots.where()})")
        obs, rewards, terminated, truncated, info = env.step(actions)
        step_rewards = rewards.tolist()
        if not math.isfinite(sum(step_rewards)):
            bad = slots.where_not_finite(step_rewards)
            raise RewardError(f"the env returned a non-finite reward: {bad}")
        wins = info["success"]
        slots.add(step_rewards, wins.tolist())
        done = terminated | truncated
        if recorder is not None or trace is not None:
            report_step(slots, batch, actions, rewards, done, wins, recorder, trace)
        ended = [slot for slot, end in enumerate(done.tolist()) if end]
        if not ended:
            continue
        end_episodes(slots, ended, on_episode, recorder)
        if pending and stop is not None and stop():
            pending.clear()  # decided: the slots are parked as their episodes end
        if any(slots.active) or pending:
            obs = start_episodes(env, policy, pending, slots, ended, recorder)
            fresh = True


def start_episodes(
    env: VectorEnv,
    policy: Policy,
    pending: deque[EpisodeSpec],
    slots: Tallies,
    ids: Sequence[int],
    recorder: EpisodeRecorder | None,
) -> object:
    """Start the next planned episodes in slots ``ids``; park the slots left without one.
    Returns the env's observations, the fresh slots' first ones among them."""
    specs: dict[int, tuple[int, int, int] | None] = {}
    for slot in ids:
        spec = pending.popleft() if pending else None
        slots.assign(slot, spec)
        specs[slot] = None if spec is None else (spec.seed, spec.init_state, spec.index)
    obs, info = reset_slots(env, specs)
    begun = [slot for slot, begins in specs.items() if begins is not None]
    if begun:
        seeds = [specs[slot][0] for slot in begun]  # type: ignore[index]
        policy_call(policy.reset, begun, seeds)
        if recorder is not None:
            recorder.begin(begun)
    slots.begin(
        begun, time.perf_counter(), info.get(initial_state.INFO_KEY),
        info.get(initial_state.SKETCH_KEY),
    )  # fmt: skip
    return obs


def report_step(
    slots: Tallies,
    batch: Mapping[str, Any],
    actions: np.ndarray,
    rewards: np.ndarray,
    done: np.ndarray,
    wins: np.ndarray,
    recorder: EpisodeRecorder | None,
    trace: StepTrace | None,
) -> None:
    """Report a step of the running episodes to the recorder and the trace, where given; the
    loop calls it only then, so a plain run pays nothing for either."""
    live = slots.live()
    if recorder is not None:
        recorder.add(batch, actions, rewards, done, wins, live)
    if trace is not None:
        for slot in live:
            trace(running_index(slots, slot), slots.steps[slot], actions[slot],
                  float(rewards[slot]), bool(wins[slot]))  # fmt: skip


def end_episodes(
    slots: Tallies,
    ended: Sequence[int],
    on_episode: Callable[[EpisodeRecord], None],
    recorder: EpisodeRecorder | None,
) -> None:
    """Close the records of the episodes that ended in slots ``ended`` at one time, each
    delivered before the recorder writes it, so a write that fails leaves it in the results."""
    now = time.perf_counter()
    for slot in ended:
        record = slots.end(slot, now)
        on_episode(record)  # in the results and the journal before a write that may fail
        if recorder is not None:
            recorder.end(slot, record)


def policy_name(policy: Policy) -> str:
    """``source:id`` from the policy's identity, for an error line."""
    who = policy.identity()
    return ":".join(str(who.get(k)) for k in ("source", "id") if who.get(k))


def running_index(slots: Tallies, slot: int) -> int:
    """The planned index of the episode the slot runs."""
    spec = slots.running[slot]
    assert spec is not None
    return spec.index
