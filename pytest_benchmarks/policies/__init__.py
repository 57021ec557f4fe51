"""The Policy protocol and the ``--benchmark-policy`` specs that build one.

A policy acts on a whole batch: the rollout calls ``act`` once per vector-env step with the
processed observations of every slot, and ``reset`` for the slots whose episodes start, with
those episodes' seeds so stochastic policies are reproducible per episode.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from pytest_benchmarks.processors import Feature
    from pytest_benchmarks.registry import Benchmark, EnvConfig


@runtime_checkable
class Policy(Protocol):
    """What the rollout needs from a policy."""

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        """Forget per-episode state of ``slots``; new episodes with ``seeds`` start there."""

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        """Actions for every slot, shape ``(num_envs, *action_shape)``."""

    def identity(self) -> dict[str, str | None]:
        """``source``, ``id`` and ``revision`` recorded in the metrics JSON."""


KINDS = ("scripted", "scripted+noise", "random", "noop", "hub", "lerobot", "module", "local")

#: Specs built on the benchmark's scripted expert.
EXPERT_KINDS = ("scripted", "scripted+noise")

VALID = (
    "scripted, scripted+noise:FRACTION, random, noop, hub:REPO_ID[@REVISION], "
    "lerobot:REPO_ID_OR_DIR, module:package.module:factory, or a checkpoint directory "
    "(./path or /path)"
)


class PolicySpecError(ValueError):
    """A ``--benchmark-policy`` value that names no known policy source."""


def _is_path(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~")) or (os.sep in spec and ":" not in spec)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind[:argument]`` and check both; raises PolicySpecError."""
    if _is_path(spec):
        return "local", spec
    kind, _, argument = spec.partition(":")
    if kind not in KINDS or kind == "local":
        raise PolicySpecError(f"unknown policy {spec!r}; valid: {VALID}")
    if kind == "scripted+noise":
        try:
            fraction = float(argument)
        except ValueError:
            fraction = -1.0
        if not 0.0 <= fraction <= 1.0:
            raise PolicySpecError(
                f"policy {spec!r}: scripted+noise needs a fraction of steps in [0, 1], "
                "e.g. scripted+noise:0.5"
            )
    elif kind in ("hub", "lerobot"):
        if not argument.split("@")[0]:
            raise PolicySpecError(
                f"policy {spec!r}: {kind} needs a repository id, e.g. {kind}:org/name"
            )
    elif kind == "module":
        module, _, factory = argument.partition(":")
        if not module or not factory:
            raise PolicySpecError(
                f"policy {spec!r}: module needs package.module:factory, "
                "e.g. module:my_pkg.policies:make"
            )
    elif argument:
        raise PolicySpecError(f"policy {kind!r} takes no argument, got {spec!r}")
    return kind, argument


def expert_based(spec: str) -> bool:
    """Whether a spec acts through the benchmark's scripted expert (which may need the env to
    compute privileged state); False for anything that is not a valid spec."""
    try:
        return parse_spec(spec)[0] in EXPERT_KINDS
    except PolicySpecError:
        return False


def make_policy(
    spec: str,
    benchmark: Benchmark,
    config: EnvConfig,
    num_envs: int,
    device: str = "cpu",
    features: dict[str, Feature] | None = None,
) -> Policy:
    """Build the policy a spec names, for one task and ``num_envs`` slots.

    Learned policies are checked against the env's ``features`` (default: the benchmark's
    declared ones) before any episode runs.
    """
    kind, argument = parse_spec(spec)
    if kind == "scripted":
        return benchmark.scripted_policy(config.task, num_envs)
    if kind in ("hub", "local", "module", "lerobot"):
        from pytest_benchmarks.policies import sources

        provided = features if features is not None else benchmark.features(config)
        if kind == "hub":
            return sources.hub_policy(argument, config, provided, num_envs, device)
        if kind == "local":
            return sources.local_policy(argument, config, provided, num_envs, device)
        if kind == "module":
            return sources.module_policy(argument, config, num_envs)
        return sources.lerobot_policy(argument, config, num_envs, device)
    from pytest_benchmarks.policies.simple import NoisyPolicy, NoopPolicy, RandomPolicy

    _, action_space = benchmark.spaces(config)
    if kind == "scripted+noise":
        expert = benchmark.scripted_policy(config.task, num_envs)
        return NoisyPolicy(expert, action_space, num_envs, float(argument))
    if kind == "random":
        return RandomPolicy(action_space, num_envs)
    return NoopPolicy(action_space, num_envs)
