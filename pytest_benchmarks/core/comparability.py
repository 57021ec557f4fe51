"""Which runs can be compared: one rule, declared on each setting of the registry
(``Option.compare``) and asked by every path that puts two runs side by side.

- The snapshot gate and ``pytest-benchmarks compare`` refuse, in one line naming each setting
  and both values, runs that differ in a "refuse" setting (another step limit, other
  observations, other initial states, another batching of inference): their success rates
  measure different experiments. A "note" setting (the seed, the episode count, the policy) is
  compared and the difference said.
- ``merge`` joins shards of one run: they agree on both kinds.
- Resume carries on one run: both kinds, and the plan (``Option.resume``): RESUMED.

Settings are compared as a metrics JSON's run block or a snapshot holds them (``Option.dump``);
a setting one side lacks (a file older than the setting, a snapshot that records it only where
it is set) had its default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.options import Option
from pytest_benchmarks.core.settings import OPTIONS
from pytest_benchmarks.core.tasks import SelectionError, TaskRef

Kind = Literal["refuse", "note"]

#: The settings with a bearing on outcomes, by field.
COMPARED: dict[str, Option] = {o.field: o for o in OPTIONS if o.compare is not None}
#: What a resumed run must share with the file it carries on: both kinds, and the settings
#: that say which episodes and tasks it runs (``Option.resume``).
RESUMED: tuple[Option, ...] = tuple(o for o in OPTIONS if o.resume or o.compare)
#: What a run's setting was where a file lacks it.
DEFAULTS: dict[str, Any] = {o.field: o.dump(o.default) for o in OPTIONS}


@dataclass(frozen=True)
class Difference:
    """One setting two runs do not share."""

    option: Option
    old: Any
    new: Any

    @property
    def refuses(self) -> bool:
        return self.option.compare == "refuse"

    def text(self) -> str:
        """``max_steps 500 → 100``."""
        return f"{self.option.field} {show(self.old)} → {show(self.new)}"


def differences(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    kinds: Iterable[Kind] = ("refuse", "note"),
    absent: Mapping[str, Any] = DEFAULTS,
    options: Iterable[Option] | None = None,
) -> list[Difference]:
    """The settings of ``kinds`` (or the ``options`` given, such as RESUMED) that differ
    between two runs' recorded settings, in the registry's order. A setting one side lacks is
    taken as ``absent`` gives it (a run block: its default), or left out where ``absent`` has
    none (a snapshot records some settings only where they apply)."""
    wanted = set(kinds)
    chosen = (
        options if options is not None else (o for o in COMPARED.values() if o.compare in wanted)
    )
    found = []
    for option in chosen:
        field = option.field
        if not (field in old or field in absent) or not (field in new or field in absent):
            continue
        a, b = old.get(field, absent.get(field)), new.get(field, absent.get(field))
        if _same(a) != _same(b):
            found.append(Difference(option, a, b))
    return found


#: Settings whose default (recorded as None: "the benchmark's own") is a value per task.
_OWN: dict[str, Any] = {"max_steps": lambda benchmark, task: benchmark.default_max_steps(task)}


def effective(
    old: Mapping[str, Any], new: Mapping[str, Any], tasks: Iterable[TaskRef]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two run blocks with "the benchmark's own" value put in where one run took it and the
    other named a value, if the benchmarks give every task of ``tasks`` that one value: Meta-
    World's own step limit is 500, so ``max_steps default → 500`` is no difference there, while
    LIBERO's differs by suite and stays one. A benchmark that cannot be loaded here leaves the
    default as recorded."""
    old, new = dict(old), dict(new)
    chosen = list(tasks)
    for field, own in _OWN.items():
        a, b = old.get(field), new.get(field)
        if (a is None) == (b is None) or not chosen:
            continue
        try:
            values = {own(catalog.get(task.env), task) for task in chosen}
        except SelectionError:  # a benchmark not installed or not loadable here
            continue
        if len(values) == 1:
            value = values.pop()
            old[field] = value if a is None else a
            new[field] = value if b is None else b
    return old, new


def refusal(found: Iterable[Difference], old: str, new: str, remedy: str) -> str | None:
    """One line refusing the comparison of ``old`` and ``new`` (``the snapshot``, ``this
    run``) for the refusing differences among ``found``, or None where there is none."""
    refused = [d for d in found if d.refuses]
    if not refused:
        return None
    flags = ", ".join(d.option.flag for d in refused)
    return (
        f"{old} and {new} are different experiments ({', '.join(d.text() for d in refused)}): "
        f"runs that differ in {flags} are not compared; {remedy}"
    )


def show(value: Any) -> str:
    """A recorded setting as the lines show it: ``default``, ``128x128``, ``a=b``."""
    if value is None:
        return "default"
    if isinstance(value, list | tuple) and value and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))  # an image size
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "none"
    return str(value)


def _same(value: Any) -> Any:
    """A recorded value in the one form two files of equal settings share (JSON gives lists
    where a run's dump gives tuples)."""
    if isinstance(value, list | tuple):
        return [_same(v) for v in value]
    if isinstance(value, dict):
        return {k: _same(v) for k, v in value.items()}
    return value
