"""The catalog of benchmarks: registration under a short name, lookup, and task selection.

A benchmark registers itself with ``@register`` when its module is imported; the built-in ones
are imported by name on first lookup, so this layer imports no benchmark module statically.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.tasks import SelectionError, TaskRef, did_you_mean

#: Modules whose import registers the built-in benchmarks; none imports a simulator.
BUILTIN = ("pytest_benchmarks.envs.libero", "pytest_benchmarks.envs.metaworld")

_REGISTRY: dict[str, Callable[[], Benchmark]] = {}
_INSTANCES: dict[str, Benchmark] = {}


def register(name: str) -> Callable[[type[Benchmark]], type[Benchmark]]:
    """Class decorator that makes a benchmark available under ``name``."""

    def decorate(cls: type[Benchmark]) -> type[Benchmark]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def names() -> list[str]:
    """Registered benchmark names, sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


def get(name: str) -> Benchmark:
    """The benchmark registered under ``name``; SelectionError naming the valid ones otherwise."""
    _load_builtin()
    if name not in _REGISTRY:
        hint = did_you_mean(name, names())
        raise SelectionError(f"unknown benchmark {name!r}{hint}; valid: {', '.join(names())}")
    if name not in _INSTANCES:
        _INSTANCES[name] = _REGISTRY[name]()
    return _INSTANCES[name]


def resolve(envs: Iterable[str], tokens: Sequence[str] | None) -> dict[str, list[TaskRef]]:
    """Tasks per benchmark for a selection; every token must belong to one of ``envs``."""
    benchmarks = [get(name) for name in envs]
    if not tokens:
        return {b.name: b.default_selection() for b in benchmarks}
    per_env: dict[str, list[str]] = {b.name: [] for b in benchmarks}
    for token in tokens:
        owners = [b for b in benchmarks if b.knows(token)]
        if not owners:
            if len(benchmarks) == 1:
                benchmarks[0].select([token])  # raises with the benchmark's own list
            known = [n for b in benchmarks for n in (*b.groups(), *(t.name for t in b.tasks()))]
            raise SelectionError(
                f"task or group {token!r}{did_you_mean(token, known)} belongs to none of "
                f"{', '.join(per_env)}; " + "; ".join(_valid_summary(b) for b in benchmarks)
            )
        for owner in owners:
            per_env[owner.name].append(token)
    return {name: get(name).select(toks) for name, toks in per_env.items()}


def _valid_summary(benchmark: Benchmark) -> str:
    groups = ", ".join(benchmark.groups())
    return f"{benchmark.name} groups: {groups} (and their tasks)"


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators; no simulator is imported here.
    for module in BUILTIN:
        importlib.import_module(module)
