"""Policy sources, and ``make_policy``, which builds the one a ``--benchmark-policy`` spec names."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.policy_spec import Loading, PolicySpec
from pytest_benchmarks.policies.hub import worker_device

if TYPE_CHECKING:
    from pytest_benchmarks.core.benchmark import Benchmark
    from pytest_benchmarks.core.features import Feature
    from pytest_benchmarks.core.tasks import EnvConfig

__all__ = ["Policy", "make_policy"]


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
