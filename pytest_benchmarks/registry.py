"""The benchmark registry: what a benchmark must provide, and how tasks are named and selected.

A benchmark is registered once under a short name (``@register``) and looked up by the plugin,
the fixtures and the command-line tools. Task lists and groups are static data, so selecting
and validating tasks never imports a simulator.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import gymnasium as gym

    from pytest_benchmarks.policies import Policy
    from pytest_benchmarks.processors import EnvProcessors, Feature


class SelectionError(ValueError):
    """A benchmark, task or group name that does not exist; the message lists the valid ones."""


@dataclass(frozen=True, order=True)
class TaskRef:
    """One task of one benchmark: the unit a test is parametrized over."""

    env: str
    suite: str
    task: str
    task_id: int
    description: str
    #: Short name within the benchmark when the task name is unwieldy (``libero_spatial/0``).
    key: str = ""

    @property
    def name(self) -> str:
        """The task's name within its benchmark, as ``--benchmark-task`` accepts it."""
        return self.key or self.task

    @property
    def id(self) -> str:
        """Stable identifier used in test ids, snapshots and the metrics JSON."""
        return f"{self.env}/{self.name}"


@dataclass(frozen=True)
class EnvConfig:
    """What a worker process needs to build one task's environment; small and picklable."""

    task: TaskRef
    max_steps: int
    #: The run's base seed; a benchmark may derive its set of initial states from it.
    seed: int
    #: ``state`` (no rendering) or ``pixels`` (camera images too).
    obs: str = "state"
    #: Camera image height and width.
    image_size: tuple[int, int] = (128, 128)
    #: No-op steps after each reset, before the episode's first step; None: the benchmark's own.
    settle_steps: int | None = None
    #: Renames of camera observation keys: (env key, policy feature suffix) pairs.
    camera_map: tuple[tuple[str, str], ...] = ()
    #: The env also computes its scripted expert's next action from privileged state (for
    #: policies built on the expert), where the benchmark's expert needs the simulator.
    privileged: bool = False
    #: Episode videos: none, failures or all; written under video_dir.
    video: str = "none"
    video_dir: str | None = None


class Benchmark(ABC):
    """A simulation benchmark: its tasks, how to build their envs and its scripted expert."""

    name: ClassVar[str]
    #: The ``pytest-benchmarks[...]`` extra that installs the simulator.
    extra: ClassVar[str]
    #: Modules that must be importable for the benchmark to run.
    requires: ClassVar[tuple[str, ...]]
    #: Observation modes the benchmark offers; the first is its default.
    observation_modes: ClassVar[tuple[str, ...]] = ("state",)
    #: Camera names (without the ``_image`` suffix) that ``--benchmark-camera-map`` may rename.
    cameras: ClassVar[tuple[str, ...]] = ()

    def missing(self) -> str | None:
        """Why this benchmark cannot run here, or None when its simulator is installed."""
        absent = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if not absent:
            return None
        return (
            f"{self.name} is not installed (no module {', '.join(absent)}): "
            f"pip install 'pytest-benchmarks[{self.extra}]'"
        )

    @abstractmethod
    def tasks(self) -> list[TaskRef]:
        """Every task, in the benchmark's own order."""

    @abstractmethod
    def groups(self) -> dict[str, list[str]]:
        """Named groups of task names (``TaskRef.name``): Meta-World's MT10, a LIBERO suite."""

    def aliases(self, token: str) -> str:
        """Map another spelling of a task name onto the canonical one."""
        return token

    def default_selection(self) -> list[TaskRef]:
        """Tasks run when the user names none."""
        return self.tasks()

    def select(self, tokens: Sequence[str]) -> list[TaskRef]:
        """Resolve task and group names into tasks, in benchmark order, without duplicates.

        Raises SelectionError for a token this benchmark does not know.
        """
        by_name = {t.name: t for t in self.tasks()}
        groups = self.groups()
        chosen: set[str] = set()
        for raw in tokens:
            token = self.aliases(raw.removeprefix(f"{self.name}/"))
            if token in groups:
                chosen.update(groups[token])
            elif token in by_name:
                chosen.add(token)
            else:
                raise SelectionError(
                    f"unknown {self.name} task or group {raw!r}; valid groups: "
                    f"{', '.join(groups)}; valid tasks: {', '.join(by_name)}"
                )
        return [t for t in self.tasks() if t.name in chosen]

    def knows(self, token: str) -> bool:
        """Whether a task or group name belongs to this benchmark."""
        try:
            self.select([token])
        except SelectionError:
            return False
        return True

    @abstractmethod
    def default_max_steps(self, task: TaskRef) -> int:
        """The episode step limit used unless the user overrides it."""

    @abstractmethod
    def init_state(self, task: TaskRef, episode: int) -> int:
        """Which of the task's initial states episode ``episode`` starts from."""

    @abstractmethod
    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        """Observation and action spaces of one env, declared without building a simulator."""

    @abstractmethod
    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        """Build one env; called inside the process that steps it.

        The env's ``reset(seed=..., options={"init_state": k})`` starts initial state k and its
        step info carries ``"success"``.
        """

    @abstractmethod
    def processors(self, config: EnvConfig) -> EnvProcessors:
        """Observation transforms from this benchmark's envs to a policy's input batch."""

    @abstractmethod
    def features(self, config: EnvConfig) -> dict[str, Feature]:
        """The processed observation features every policy can rely on."""

    @abstractmethod
    def scripted_policy(self, task: TaskRef, num_envs: int) -> Policy:
        """The benchmark's scripted expert for one task."""

    def scripted_missing(self, task: TaskRef) -> str | None:
        """Why the scripted expert cannot run this task (its tests are skipped), or None."""
        return None

    def identity(self) -> dict[str, str | None]:
        """Name and version of the simulator package, for the metrics JSON."""
        return {"name": self.name, "version": None}


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
        raise SelectionError(f"unknown benchmark {name!r}; valid: {', '.join(names())}")
    if name not in _INSTANCES:
        _INSTANCES[name] = _REGISTRY[name]()
    return _INSTANCES[name]


def find_task(task_id: str) -> TaskRef:
    """Look a task up by its stable id (``metaworld/push-v3``)."""
    env, _, name = task_id.partition("/")
    tasks = get(env).select([name])
    if len(tasks) != 1:
        raise SelectionError(f"{task_id!r} names a group, not a single task")
    return tasks[0]


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
            raise SelectionError(
                f"task or group {token!r} belongs to none of {', '.join(per_env)}; "
                + "; ".join(_valid_summary(b) for b in benchmarks)
            )
        for owner in owners:
            per_env[owner.name].append(token)
    return {name: get(name).select(toks) for name, toks in per_env.items()}


def _valid_summary(benchmark: Benchmark) -> str:
    groups = ", ".join(benchmark.groups())
    return f"{benchmark.name} groups: {groups} (and their tasks)"


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators; no simulator is imported here.
    from pytest_benchmarks.envs import libero, metaworld  # noqa: F401


def task_of_nodeid(nodeid: str, task_ids: Iterable[str]) -> str | None:
    """The task id in a test id's parameters (``test_x[metaworld/push-v3]``), or None."""
    params = nodeid[nodeid.find("[") :] if nodeid.endswith("]") else ""
    # Longest first: in test_x[a/x-y], task a/x-y must win over task a/x followed by "-".
    for task_id in sorted(task_ids, key=len, reverse=True):
        for left in "[-":
            for right in "]-":
                if f"{left}{task_id}{right}" in params:
                    return task_id
    return None
