"""``--benchmark-env=lerobot:TYPE``: any env type LeRobot knows (its built-in ones, and those an
installed ``lerobot_env_*`` plugin registers) as a benchmark, through LeRobot's own config.

Tasks are what the config's ``create_envs`` lists, named ``TASK_GROUP/TASK_ID`` as
``lerobot-eval``'s ``eval_info.json`` names them; ``--benchmark-task`` takes LeRobot's task
strings (``push-v3``, a Meta-World difficulty group, ``PushT-v0``), each expanding to the tasks
``create_envs`` makes of it, and those names. Without it, the config's default task runs.
``--benchmark-env-arg FIELD=VALUE`` sets the config's fields as ``lerobot-eval --env.FIELD=VALUE``
does. Episode *i* is seeded ``seed + i``, as ``lerobot-eval`` seeds it; the step limit is the
env's own ``_max_episode_steps``, the one ``lerobot-eval``'s rollout stops at.

The observations are the env's own, named as LeRobot's ``preprocess_observation`` names them
(``observation.image`` or ``observation.images.CAMERA``, ``observation.state``,
``observation.environment_state``): the layout a LeRobot policy trained on the env reads. A
type's env preprocessor (``get_env_processors``, LIBERO's for one) runs as ``lerobot-eval`` runs
it (``processing``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.benchmark import FAMILY_MEMBERS, Benchmark
from pytest_benchmarks.core.features import IMAGE_PREFIX, Feature
from pytest_benchmarks.core.processors import Batch, EnvProcessors
from pytest_benchmarks.core.tasks import (
    EnvArgsError,
    EnvConfig,
    SelectionError,
    TaskRef,
    did_you_mean,
)
from pytest_benchmarks.envs.lerobot import env as lerobot_env
from pytest_benchmarks.envs.lerobot import processing

#: The family's prefix: ``lerobot:TYPE``.
FAMILY = "lerobot"
STATE, ENV_STATE, SINGLE_IMAGE = (
    "observation.state",
    "observation.environment_state",
    "observation.image",
)


class LeRobotEnv(Benchmark):
    """The benchmark of one LeRobot env type; ``of(TYPE)`` makes its class."""

    env_type: ClassVar[str] = ""
    extra = "lerobot"
    requires = ("lerobot",)
    observation_modes = ("lerobot",)
    takes_env_args = True
    # LeRobot's env configs import transformers and torch: 3 s in each worker otherwise.
    worker_modules = (
        "lerobot.envs.configs",
        "lerobot.envs.factory",
        "pytest_benchmarks.envs.lerobot.benchmark",
    )
    #: ``--benchmark-env-arg``'s fields, bound by the run's selection (``bind``).
    env_args: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, env_type: str) -> type[Benchmark]:
        """The class of ``lerobot:env_type``, one per type and found by name in this module, so
        that it pickles to the processes that step the envs."""
        name = f"{CLASS_PREFIX}{env_type}"
        if name not in FAMILY_MEMBERS:
            FAMILY_MEMBERS[name] = type(name, (cls,), {
                "name": f"{FAMILY}:{env_type}", "env_type": env_type, "__module__": __name__,
                "__qualname__": name,
                "worker_modules": cls.worker_modules + TYPE_MODULES.get(env_type, ()),
            })  # fmt: skip
        return FAMILY_MEMBERS[name]

    def __init__(self) -> None:
        self._listed: dict[str | None, list[TaskRef]] = {}
        self._default_error: lerobot_env.LeRobotEnvError | None = None

    @property
    def fps(self) -> int:  # type: ignore[override]
        """The config's control rate (a recorded dataset's fps), 30 where it cannot be made."""
        try:
            return int(self.config(None).fps)
        except lerobot_env.LeRobotEnvError:
            return 30

    def bind(self, env_args: Sequence[tuple[str, str]]) -> None:
        """Use these config fields from now on (tasks listed with others are listed again)."""
        if tuple(env_args) != self.env_args:
            self.env_args = tuple(env_args)
            self._listed.clear()
            self._default_error = None

    def missing(self) -> str | None:
        if importlib.util.find_spec("lerobot") is None:
            return f"{self.name} needs LeRobot: pip install 'pytest-benchmarks[lerobot]'"
        try:
            self.config(None)
        except lerobot_env.LeRobotEnvError as exc:
            with contextlib.suppress(lerobot_env.LeRobotEnvError):
                if self.env_args and lerobot_env.make_config(self.env_type, None, ()):
                    return None  # --benchmark-env-arg's fault, said with the selection
            return str(exc)
        return None

    def config(self, task: str | None) -> Any:
        return lerobot_env.make_config(self.env_type, task, self.env_args)

    def listing(self, task: str | None) -> list[TaskRef]:
        """The tasks LeRobot's ``create_envs`` makes of the task string ``task`` (None: the
        config's default)."""
        if task not in self._listed:
            config = self.config(task)
            envs = lerobot_env.vector_envs(config)
            try:
                self._listed[task] = [
                    self._ref(config, str(group), tid, vector.envs[0])
                    for group, tasks in envs.items()
                    for tid, vector in tasks.items()
                ]
            finally:
                lerobot_env.close_all(envs)
        return self._listed[task]

    def _ref(self, config: Any, group: str, tid: Any, env: gym.Env[Any, Any]) -> TaskRef:
        words = lerobot_env.description(env) or f"{self.name} {group}/{tid}"
        return TaskRef(self.name, group, str(config.task), _task_id(tid), words, f"{group}/{tid}")

    def tasks(self) -> list[TaskRef]:
        """The default task's tasks (none where LeRobot cannot make it) and those listed."""
        if self._default_error is None:
            try:
                self.listing(None)
            except lerobot_env.LeRobotEnvError as exc:
                self._default_error = exc  # said by default_selection, not tried again
        return list({t.id: t for tasks in self._listed.values() for t in tasks}.values())

    def default_selection(self) -> list[TaskRef]:
        try:
            if self._default_error is not None:
                raise self._default_error
            return self.listing(None)
        except lerobot_env.LeRobotEnvError as exc:
            self._blame_env_args(exc, None)
            raise SelectionError(f"{exc} (the config's default task; --benchmark-task names "
                                 "another, as LeRobot's --env.task does)") from None  # fmt: skip

    def _blame_env_args(self, exc: lerobot_env.LeRobotEnvError, task: str | None) -> None:
        """Raise EnvArgsError when LeRobot makes ``task``'s envs without --benchmark-env-arg's
        fields: they, not the task, are what it refused."""
        if not self.env_args:
            return
        try:
            envs = lerobot_env.vector_envs(lerobot_env.make_config(self.env_type, task, ()))
        except lerobot_env.LeRobotEnvError:
            return
        lerobot_env.close_all(envs)
        given = ",".join(f"{name}={value}" for name, value in self.env_args)
        raise EnvArgsError(f"{given}: {exc} (without these fields LeRobot makes it)") from None

    def groups(self) -> dict[str, list[str]]:
        return {}

    def select(self, tokens: Sequence[str]) -> list[TaskRef]:
        """Task names (``GROUP/ID``) of the default task, or LeRobot task strings."""
        chosen: dict[str, TaskRef] = {}
        for raw in tokens:
            token = raw.removeprefix(f"{self.name}/")
            by_name = {t.name: t for t in self.tasks()}
            if token in by_name:
                chosen[by_name[token].id] = by_name[token]
                continue
            named = self._named(token)
            if named is not None:
                chosen[named.id] = named
                continue
            try:
                found = self.listing(token)
            except lerobot_env.LeRobotEnvError as exc:
                self._blame_env_args(exc, token)
                raise SelectionError(
                    f"{self.name}: {raw!r} is no task here{did_you_mean(token, by_name)} and "
                    f"LeRobot makes no env of it ({str(exc).split(': ', 1)[-1]}); tasks: "
                    f"{', '.join(by_name)}"
                ) from None
            chosen.update((t.id, t) for t in found)
        return list(chosen.values())

    def _named(self, token: str) -> TaskRef | None:
        """``GROUP/ID`` of a task string other than the default (``libero_spatial/3``): the
        task ``create_envs`` lists under that name for the task string ``GROUP``."""
        group, _, task_id = token.rpartition("/")
        if not group or not task_id.isdigit():
            return None
        try:
            listed = self.listing(group)
        except lerobot_env.LeRobotEnvError:
            return None
        return next((t for t in listed if t.name == token), None)

    def default_max_steps(self, task: TaskRef) -> int:
        return self._facts(task)[2]

    def init_state(self, task: TaskRef, episode: int) -> int:
        return 0

    def _facts(self, task: TaskRef) -> tuple[gym.Space[Any], gym.Space[Any], int]:
        return _facts(self.env_type, task.task, self.env_args, task.suite, task.task_id)

    def describe(self, config: EnvConfig) -> EnvConfig:
        """The base's description; what LeRobot makes with --benchmark-env-arg's fields but
        this harness cannot run (pixels alone, no dict) blames those fields when the env runs
        without them."""
        try:
            return super().describe(config)
        except lerobot_env.LeRobotEnvError as exc:
            if not config.env_args:
                raise
            try:
                super().describe(replace(config, env_args=()))
            except lerobot_env.LeRobotEnvError:
                raise exc from None
            given = ",".join(f"{name}={value}" for name, value in config.env_args)
            raise EnvArgsError(
                f"{given}: {self.name}: {exc} (without these fields it runs here)"
            ) from None

    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        observation, action, _ = _facts(
            self.env_type, config.task.task, config.env_args, config.task.suite,
            config.task.task_id,
        )  # fmt: skip
        return observation, action

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        made = lerobot_env.make_config(self.env_type, config.task.task, config.env_args)
        return lerobot_env.make_env(made, config.task.suite, config.task.task_id)

    def processors(self, config: EnvConfig) -> EnvProcessors:
        """The env's observations under LeRobot's names; through the type's env preprocessor
        (``processing``) where it declares one."""
        observation, _ = self.spaces(config)
        made = lerobot_env.make_config(self.env_type, config.task.task, config.env_args)
        pre = processing.env_preprocessor(made)
        if pre is None:
            steps = [transform_for(observation)]
            return EnvProcessors(features(observation), config.task.description, steps)
        step = processing.pipeline_step(pre)
        found = processing.sampled_features(step, observation)
        return EnvProcessors(found, config.task.description, [step])

    def scripted_policy(self, task: TaskRef, num_envs: int) -> Any:
        raise NotImplementedError(self.scripted_missing(task))

    def scripted_missing(self, task: TaskRef) -> str | None:
        return (
            f"no scripted expert for {self.name}: run a policy of your own "
            "(--benchmark-policy=module:PKG.MOD:FACTORY or lerobot:CHECKPOINT)"
        )


#: The simulator modules a type's env workers import, where they are known to be safe to
#: import in the forkserver (``Benchmark.worker_modules``).
TYPE_MODULES: dict[str, tuple[str, ...]] = {
    "metaworld": ("metaworld", "lerobot.envs.metaworld"),
    "pusht": ("gym_pusht",),
}

#: The name of ``lerobot:TYPE``'s class: ``LeRobotEnv_TYPE``.
CLASS_PREFIX = "LeRobotEnv_"


def __getattr__(name: str) -> type[Benchmark]:
    """``LeRobotEnv_TYPE``: the class of ``lerobot:TYPE``, made on first use (how a process
    unpickling one finds it)."""
    if name.startswith(CLASS_PREFIX):
        return LeRobotEnv.of(name.removeprefix(CLASS_PREFIX))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _task_id(tid: Any) -> int:
    if isinstance(tid, bool) or not isinstance(tid, int):
        raise lerobot_env.LeRobotEnvError(f"create_envs gave task id {tid!r}, not a number")
    return tid


@functools.cache
def _facts(
    env_type: str, task: str, args: tuple[tuple[str, str], ...], group: str, task_id: int
) -> tuple[gym.Space[Any], gym.Space[Any], int]:
    """One env's observation and action spaces and step limit. An env is built and reset once,
    then closed: LeRobot's lazy envs build their simulator on the first reset, so a missing one
    is said here, at the session's start, not as every task's error."""
    env = lerobot_env.make_env(lerobot_env.make_config(env_type, task, args), group, task_id)
    try:
        env.reset(seed=0)
        return env.observation_space, env.action_space, lerobot_env.max_steps(env)
    except Exception as exc:
        raise lerobot_env.made_error(env_type, "its env's first reset", exc) from exc
    finally:
        env.close()


def _keys(space: gym.Space[Any]) -> dict[str, tuple[tuple[str, ...], gym.Space[Any]]]:
    """Policy feature name -> (path in the raw observation, its space), as LeRobot's
    ``preprocess_observation`` names them."""
    if not isinstance(space, gym.spaces.Dict):
        raise lerobot_env.LeRobotEnvError(f"the env's observations are {space}, not a dict")
    found: dict[str, tuple[tuple[str, ...], gym.Space[Any]]] = {}
    pixels = space.spaces.get("pixels")
    if isinstance(pixels, gym.spaces.Dict):
        for camera, sub in pixels.spaces.items():
            found[f"{IMAGE_PREFIX}{camera}"] = (("pixels", camera), sub)
    elif pixels is not None:
        found[SINGLE_IMAGE] = (("pixels",), pixels)
    for raw, name in (("agent_pos", STATE), ("environment_state", ENV_STATE)):
        if raw in space.spaces:
            found[name] = ((raw,), space.spaces[raw])
    if not found:  # LeRobot's preprocess_observation would hand a policy nothing
        raise lerobot_env.LeRobotEnvError(
            f"the env's observations ({', '.join(space.spaces)}) hold none of pixels, "
            "agent_pos, environment_state, the keys LeRobot's policies read"
        )
    return found


def features(space: gym.Space[Any]) -> dict[str, Feature]:
    """The features ``transform_for(space)`` gives: images as they are (HWC uint8), states as
    float32."""
    return {
        name: Feature(
            tuple(sub.shape or ()), "uint8" if name.startswith(SINGLE_IMAGE) else "float32"
        )
        for name, (_, sub) in _keys(space).items()
    }


def transform_for(space: gym.Space[Any]) -> Callable[[Batch], Batch]:
    """The step that puts the raw batched observation under LeRobot's feature names."""
    found = features(space)
    paths = {name: path for name, (path, _) in _keys(space).items()}

    def transform(batch: Batch) -> Batch:
        out: Batch = {}
        for name, path in paths.items():
            value = batch["raw"]
            for key in path:
                value = value[key]
            out[name] = np.asarray(value, dtype=found[name].dtype)
        return out

    return transform
