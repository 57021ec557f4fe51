"""The option registry's entry type: one ``Option`` per setting, declared once on its
``Settings`` field (as LeRobot's draccus configs declare a CLI on a dataclass).

From the entries come the plugin's ``--benchmark-*`` options and ini keys, the checks of every
value (plugin and API alike), the run block of the metrics JSON, what a resumed run must share
with the file it carries on, the settings a snapshot records and the command that reruns a
task. Adding a setting is one field plus its use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pytest_benchmarks.core import values

#: A snapshot records a setting: always; only where images are rendered (left out otherwise);
#: always, None where no images are rendered; only when it is set (not its default).
SnapshotRule = Literal["always", "pixels", "pixels_or_none", "set"]


@dataclass(frozen=True)
class Option:
    """One setting: its flag, how a value is read, and what the setting decides."""

    help: str
    parse: values.Parser
    #: The value's form in ``--help``; None: a flag that takes no value.
    metavar: str | None = None
    #: ``--benchmark-NAME`` when it is not the field's name (``--benchmark-env`` for envs).
    name: str = ""
    #: Whether two runs that differ in it can be compared (``core.comparability``, asked by
    #: the snapshot gate, ``merge``, ``compare`` and resume): "refuse" (another experiment:
    #: the step limit, what the policy sees, the initial states, how it is batched), "note"
    #: (compared, the difference said: the seed, the episode count, the policy), None (no
    #: bearing on an episode's outcome: batch size, workers, paths, the gate's own settings).
    compare: Literal["refuse", "note"] | None = None
    #: Beyond ``compare``, a resumed run must have the same value as the file it carries on:
    #: the setting decides which tasks and episodes the run holds (the plan, the dataset).
    resume: bool = False
    #: The rerun command names it: always, or where it is not the default.
    rerun: Literal["always", "changed"] | None = None
    #: How a task's snapshot records it (None: not at all).
    snapshot: SnapshotRule | None = None
    #: An ini value is a path, relative to the ini file's directory.
    ini_path: bool = False
    #: The keyword of ``pytest_benchmarks.api.evaluate`` that takes it (None: the plugin only).
    api: str | None = None
    #: The metrics JSON's run block holds it.
    run_block: bool = True
    #: The setting as the metrics JSON holds it, and as the option's text (rerun command).
    dump: Callable[[Any], Any] = values.jsonable
    show: Callable[[Any], str] = str
    #: Filled in from the ``Settings`` field.
    field: str = ""
    default: Any = None

    @property
    def key(self) -> str:
        """The option's name: ``episode`` for ``--benchmark-episode`` (``validation.build``'s
        keyword)."""
        return self.name or self.field

    @property
    def flag(self) -> str:
        return f"--benchmark-{self.key.replace('_', '-')}"

    @property
    def dest(self) -> str:
        """The argparse destination and the ini key: ``benchmark_max_steps``."""
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def is_flag(self) -> bool:
        return self.metavar is None


def setting(default: Any, option: Option) -> Any:
    """A ``Settings`` field declared with its option."""
    return dataclasses.field(default=default, metadata={"option": option})


def registry(settings_type: type) -> tuple[Option, ...]:
    """The options declared on a dataclass's fields, in field order, with field and default."""
    return tuple(
        dataclasses.replace(f.metadata["option"], field=f.name, default=f.default)
        for f in dataclasses.fields(settings_type)
        if "option" in f.metadata
    )
