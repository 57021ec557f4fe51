"""What a benchmark must provide: its tasks, how to build their envs, its scripted expert.

Task lists and groups are static data, so selecting and validating tasks never imports a
simulator.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_benchmarks.core.tasks import EnvConfig, SelectionError, TaskRef, did_you_mean

if TYPE_CHECKING:
    import gymnasium as gym

    from pytest_benchmarks.core.features import Feature
    from pytest_benchmarks.core.policy import Policy
    from pytest_benchmarks.core.processors import EnvProcessors


#: The classes benchmark families made (``lerobot:pusht``'s), by class name: kept here, in a
#: module that is imported once per process, so that each stays the one class of its name.
FAMILY_MEMBERS: dict[str, type[Benchmark]] = {}


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
    #: Control steps per second of simulated time, as LeRobot's env config for the benchmark
    #: declares it: a recorded dataset's fps, so action chunks keep their timing.
    fps: ClassVar[int] = 30
    #: The robot, as a recorded dataset's ``robot_type``.
    robot_type: ClassVar[str | None] = None
    #: Episode videos are made of camera images (so ``--benchmark-obs=state`` has none), not
    #: rendered apart from the observations.
    video_from_cameras: ClassVar[bool] = False
    #: Distributions whose versions the metrics JSON records (the simulator's packages).
    packages: ClassVar[tuple[str, ...]] = ()
    #: Whether ``--benchmark-env-arg`` fields reach its env config (``bind``).
    takes_env_args: ClassVar[bool] = False
    #: Modules each env worker process imports, which the forkserver imports once instead, so
    #: that a worker starts by a fork (``engine.vector.preload_workers``). Only modules that
    #: are safe to import before a fork: no threads, no GL context.
    worker_modules: ClassVar[tuple[str, ...]] = ()

    def bind(self, env_args: Sequence[tuple[str, str]]) -> None:  # noqa: B027 (optional hook)
        """Take the run's ``--benchmark-env-arg`` fields before its tasks are listed."""

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
                hint = did_you_mean(token, groups) or did_you_mean(token, by_name)
                raise SelectionError(
                    f"unknown {self.name} task or group {raw!r}{hint}; valid groups: "
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

    def describe(self, config: EnvConfig) -> EnvConfig:
        """``config`` with what a policy may know before any env is built: one env's
        observation and action spaces and the processed features, as this benchmark declares."""
        observation_space, action_space = self.spaces(config)
        return replace(
            config,
            observation_space=observation_space,
            action_space=action_space,
            features=dict(self.features(config)),
        )

    @abstractmethod
    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        """Observation and action spaces of one env, declared without building a simulator."""

    @abstractmethod
    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        """Build one env; called inside the process that steps it.

        The env's ``reset(seed=..., options={"init_state": k, "index": i})`` starts episode i
        (counted from 0 in its task) from initial state k, and its step info carries
        ``"success"``; an env whose scene depends on nothing but these may ignore ``index``.
        """

    @abstractmethod
    def processors(self, config: EnvConfig) -> EnvProcessors:
        """Observation transforms from this benchmark's envs to a policy's input batch."""

    def features(self, config: EnvConfig) -> dict[str, Feature]:
        """The processed observation features every policy can rely on: by default those the
        processors declare."""
        return self.processors(config).features

    @abstractmethod
    def scripted_policy(self, task: TaskRef, num_envs: int) -> Policy:
        """The benchmark's scripted expert for one task."""

    def unread_cameras(self, config: EnvConfig, reads: Collection[str]) -> tuple[str, ...]:
        """Env camera keys whose images feed none of the features in ``reads`` (a policy's
        inputs) nor the episode videos: the env may render them black. None by default."""
        return ()

    def scripted_missing(self, task: TaskRef) -> str | None:
        """Why the scripted expert cannot run this task (its tests are skipped), or None."""
        return None
