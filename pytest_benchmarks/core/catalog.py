"""The catalog of benchmarks: discovery through the ``pytest_benchmarks.benchmarks`` entry-point
group, lookup by name, and task selection.

Every benchmark, the built-in ones included, is a ``Benchmark`` subclass named by an entry point
(``metaworld = "pytest_benchmarks.envs.metaworld.benchmark:MetaWorld"``); the entry point's name
is the benchmark's name. Nothing is imported until a benchmark is asked for, and a benchmark's
module imports no simulator. ``register`` adds one from code (a conftest, a test) the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from importlib import metadata

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.tasks import SelectionError, TaskRef, did_you_mean

#: The entry-point group a package names its benchmarks in.
GROUP = "pytest_benchmarks.benchmarks"
#: The group of benchmark families, a benchmark per parameter: ``lerobot:TYPE``. The entry
#: point names a ``Benchmark`` subclass whose ``of(PARAMETER)`` gives the benchmark's class.
FAMILY_GROUP = "pytest_benchmarks.families"

_REGISTERED: dict[str, type[Benchmark]] = {}
_INSTANCES: dict[str, Benchmark] = {}


class BenchmarkLoadError(SelectionError):
    """A benchmark's entry point names something that cannot be imported or is no Benchmark."""


def register(name: str) -> Callable[[type[Benchmark]], type[Benchmark]]:
    """Class decorator that makes a benchmark available under ``name`` without an entry point."""

    def decorate(cls: type[Benchmark]) -> type[Benchmark]:
        cls.name = name
        _REGISTERED[name] = cls
        _INSTANCES.pop(name, None)
        return cls

    return decorate


def registered_modules() -> list[str]:
    """The modules whose ``register`` made a benchmark known without an entry point: another
    process (a Ray node) imports them to know the same benchmarks."""
    return sorted({cls.__module__ for cls in _REGISTERED.values()})


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def _claimants(name: str) -> list[str]:
    """The distinct entry points that register ``name``, as ``value (distribution)``."""
    found = {
        ep.value: getattr(ep.dist, "name", "?")
        for ep in metadata.entry_points(group=GROUP)
        if ep.name == name
    }
    return [f"{value} ({dist})" for value, dist in found.items()]


def names() -> list[str]:
    """Every benchmark's name, sorted: the installed entry points and the registered ones."""
    return sorted({*_entry_points(), *_REGISTERED})


def families() -> list[str]:
    """The installed benchmark families' prefixes (``lerobot`` for ``lerobot:TYPE``)."""
    return sorted({ep.name for ep in metadata.entry_points(group=FAMILY_GROUP)})


def _family_entry(name: str) -> metadata.EntryPoint | None:
    """The family entry point of a ``FAMILY:PARAMETER`` name, or None."""
    family, sep, _ = name.partition(":")
    found = (ep for ep in metadata.entry_points(group=FAMILY_GROUP) if ep.name == family)
    return next(found, None) if sep else None


def valid_names() -> str:
    """The names a user may give, for an error message: the benchmarks, then the families."""
    return ", ".join([*names(), *(f"{family}:TYPE" for family in families())])


def exists(name: str) -> bool:
    """Whether ``name`` is a benchmark's, or a member's of an installed family."""
    return name in names() or _family_entry(name) is not None


def get(name: str) -> Benchmark:
    """The benchmark named ``name``; SelectionError naming the valid ones otherwise, and
    BenchmarkLoadError naming its entry point when it cannot be made."""
    if name not in _INSTANCES:
        cls = _load(name)
        try:
            _INSTANCES[name] = cls()
        except Exception as exc:
            raise BenchmarkLoadError(
                f"benchmark {name!r} ({_where(name)}): {one_line(exc)}"
            ) from exc
    return _INSTANCES[name]


def _where(name: str) -> str:
    member = _family_entry(name)
    if member is not None:
        return f"{FAMILY_GROUP} entry point {member.value!r}"
    entry = _entry_points().get(name)
    return "registered in code" if entry is None else f"{GROUP} entry point {entry.value!r}"


def call[T](benchmark: Benchmark, what: str, function: Callable[[], T]) -> T:
    """``function()``, a call into a benchmark's own code (``what`` names it); what it raises
    becomes one BenchmarkLoadError naming the benchmark and its entry point."""
    try:
        return function()
    except (Exception, SystemExit) as exc:  # a plugin it imports that exits, too
        raise BenchmarkLoadError(
            f"benchmark {benchmark.name!r} ({_where(benchmark.name)}): {what} raised "
            f"{one_line(exc)}"
        ) from exc


def problem(name: str) -> str | None:
    """Why the benchmark ``name`` cannot run here (not installed, or its entry point or its
    task list is broken), or None."""
    try:
        benchmark = get(name)
        missing = call(benchmark, "missing()", benchmark.missing)
        if missing is None:
            call(benchmark, "tasks()", benchmark.tasks)
        return missing
    except (BenchmarkLoadError, SelectionError) as exc:  # ``lerobot:`` with no type, too
        return str(exc)


def _member(name: str, entry: metadata.EntryPoint) -> type[Benchmark]:
    """The class of ``FAMILY:PARAMETER`` from its family's entry point."""
    family, _, parameter = name.partition(":")
    if not parameter:
        raise SelectionError(f"benchmark {name!r} names no {family} type: {family}:TYPE")
    try:
        cls = entry.load()
        member = cls.of(parameter)
    except (Exception, SystemExit) as exc:
        raise BenchmarkLoadError(
            f"benchmark {name!r} ({FAMILY_GROUP} entry point {entry.value!r}) cannot be loaded: "
            f"{one_line(exc)}"
        ) from exc
    if not (isinstance(member, type) and issubclass(member, Benchmark)):
        raise BenchmarkLoadError(f"benchmark {name!r}: {entry.value}.of() gave {member!r}")
    return member


def _load(name: str) -> type[Benchmark]:
    if name in _REGISTERED:
        return _REGISTERED[name]
    member = _family_entry(name)
    if member is not None:
        return _member(name, member)
    entry = _entry_points().get(name)
    claimants = _claimants(name)
    if len(claimants) > 1:
        raise BenchmarkLoadError(
            f"benchmark {name!r} is registered by more than one package: "
            f"{'; '.join(claimants)}; uninstall all but one"
        )
    if entry is None:
        raise SelectionError(
            f"unknown benchmark {name!r}{did_you_mean(name, names())}; valid: {valid_names()}"
        )
    try:
        cls = entry.load()
    except (Exception, SystemExit) as exc:  # a module that exits on import, too
        raise BenchmarkLoadError(
            f"benchmark {name!r} ({GROUP} entry point {entry.value!r}) cannot be loaded: "
            f"{one_line(exc)}"
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
        raise BenchmarkLoadError(
            f"benchmark {name!r}: {GROUP} entry point {entry.value!r} is {cls!r}, "
            "not a subclass of pytest_benchmarks.Benchmark"
        )
    cls.name = name
    return cls


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
