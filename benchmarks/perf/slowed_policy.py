"""A policy made slower on purpose, to see a speed gate fail.

``--benchmark-policy=module:slowed_policy:make`` with ``benchmarks/perf`` on ``PYTHONPATH``:
the policy ``SLOWED_POLICY`` names (any ``--benchmark-policy`` spec; default ``scripted``),
with ``SLOW_S`` seconds (default 0.001) added to each ``act`` call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.policies import make_policy


class Slowed:
    """``policy`` with ``delay_s`` more per ``act``; its identity says so."""

    def __init__(self, policy: Policy, delay_s: float) -> None:
        self.policy = policy
        self.delay_s = delay_s

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        self.policy.reset(slots, seeds)

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        time.sleep(self.delay_s)
        return self.policy.act(batch)

    def identity(self) -> dict[str, str | None]:
        identity = dict(self.policy.identity())
        identity["id"] = f"{identity.get('id')} slowed by {self.delay_s:g} s"
        return identity


def make(config: EnvConfig, num_envs: int) -> Slowed:
    benchmark = catalog.get(config.task.env)
    features = benchmark.processors(config).features
    spec = os.environ.get("SLOWED_POLICY", "scripted")
    policy = make_policy(spec, benchmark, config, num_envs, "cpu", features)
    return Slowed(policy, float(os.environ.get("SLOW_S", "0.001")))
