"""Policy sources; ``make_policy``, which builds the one a ``--benchmark-policy`` spec names, and
``build_policy``, the one way every run builds a task's policy (``evaluate()``, the plugin's
``policy`` fixture, a Ray node)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_benchmarks.core.errors import short
from pytest_benchmarks.core.features import FeatureMismatch
from pytest_benchmarks.core.policy import Policy, PolicyError
from pytest_benchmarks.core.policy_spec import Loading, PolicySpec
from pytest_benchmarks.policies.endpoint import PolicyServerError
from pytest_benchmarks.policies.hub import PolicySourceError, worker_device

if TYPE_CHECKING:
    from pytest_benchmarks.core.benchmark import Benchmark
    from pytest_benchmarks.core.features import Feature
    from pytest_benchmarks.core.tasks import EnvConfig

__all__ = ["Policy", "build_policy", "make_policy"]


def build_policy(
    policy: PolicySpec | str | Policy | Callable[[EnvConfig, int], Policy],
    benchmark: Benchmark,
    config: EnvConfig,
    num_envs: int,
    loading: Loading,
    features: dict[str, Feature],
    worker: str | None = None,
) -> Policy:
    """The task's policy from a spec, an instance (used as is) or a factory. A policy that
    cannot be built (its source, its features, its server, a factory that returns no Policy)
    is ``PolicyError`` in one line: the task's error, before any episode."""
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, (str, PolicySpec)):
        try:
            return make_policy(policy, benchmark, config, num_envs, loading, features, worker)
        except (PolicySourceError, FeatureMismatch, PolicyServerError) as exc:
            raise PolicyError(str(exc)) from None
    made = policy(config, num_envs)
    if isinstance(made, type) or not isinstance(made, Policy):
        name = getattr(policy, "__name__", None) or short(policy, 40)
        raise PolicyError(
            f"policy: the factory {name}(config, num_envs) returned {short(made)}, not a Policy "
            "(an object with reset, act and identity)"
        )
    return made


def make_policy(
    spec: PolicySpec | str,
    benchmark: Benchmark,
    config: EnvConfig,
    num_envs: int,
    loading: Loading | str = "cpu",
    features: dict[str, Feature] | None = None,
    worker: str | None = None,
) -> Policy:
    """Build the policy a spec names, for one task and ``num_envs`` slots, loaded as ``loading``
    says (or a device alone: auto, cpu, cuda or cuda:N). The device is resolved here and only for
    learned policies: ``worker`` (an xdist worker's id) picks its GPU
    (``policies.hub.worker_device``).

    Learned policies are checked against the env's ``features`` (default: the benchmark's
    declared ones) before any episode runs.
    """
    if isinstance(spec, str):
        spec = PolicySpec.parse(spec)
    kind, argument = spec.kind, spec.argument
    if config.action_space is None:  # made by hand, not by the settings
        config = benchmark.describe(config)
    if kind == "scripted":
        return benchmark.scripted_policy(config.task, num_envs)
    if kind == "module":
        from pytest_benchmarks.policies import sources

        return sources.module_policy(argument, config, num_envs)
    if kind in ("hub", "local", "lerobot"):
        from pytest_benchmarks.policies import sources

        provided = features if features is not None else dict(config.features)
        if isinstance(loading, str):
            loading = Loading(loading)
        # torch's device: resolved once, here
        loading = replace(loading, device=worker_device(loading.device, worker))
        if kind == "hub":
            return sources.hub_policy(argument, config, provided, num_envs, loading.device)
        if kind == "local":
            return sources.local_policy(argument, config, provided, num_envs, loading.device)
        if loading.server is not None:
            from pytest_benchmarks.policies.endpoint import Endpoint
            from pytest_benchmarks.policies.served import ServedPolicy

            endpoint = Endpoint.parse(loading.server)
            return ServedPolicy.connect(endpoint, argument, config, provided, num_envs, loading)
        return sources.lerobot_policy(argument, config, provided, num_envs, loading)
    from pytest_benchmarks.policies.simple import NoisyPolicy, NoopPolicy, RandomPolicy

    action_space = config.action_space
    if kind == "scripted+noise":
        expert = benchmark.scripted_policy(config.task, num_envs)
        return NoisyPolicy(expert, action_space, num_envs, float(argument))
    if kind == "random":
        return RandomPolicy(action_space, num_envs)
    return NoopPolicy(action_space, num_envs)
