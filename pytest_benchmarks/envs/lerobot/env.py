"""LeRobot's env configs as this harness's envs: a config of a registered type (built-in, or from
an installed ``lerobot_env_*`` plugin) made with LeRobot's own ``--env.*`` parsing, its tasks as
``create_envs`` lists them, and one env of a task taken from that same construction path.

``create_envs(n_envs=1)`` builds a one-env ``SyncVectorEnv`` per task (LeRobot's Meta-World,
LIBERO and RoboCasa envs build their simulator lazily, on first use); the env is that vector's
only env, wrapped so that it speaks this harness's protocol: ``reset`` passes LeRobot's "a new
rollout" option (``NEW_ROLLOUT_OPTION``) and drops the harness's own (after pointing LeRobot's
LIBERO env at episode *i*'s init state, as ``lerobot-eval`` does), and every step's info
carries ``success`` from LeRobot's ``is_success`` (or gym-hil's ``succeed``). Its
``simulator_state`` adds Meta-World's placement (the random vector its reset drew) to the
simulator's state, which the initial-state digest would otherwise miss where a task places
objects and goals through the model.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from pytest_benchmarks.core import initial_state
from pytest_benchmarks.core.errors import one_line

#: Where Meta-World keeps the object and goal positions its last reset drew.
PLACEMENT = "_last_rand_vec"

#: gym-hil's success key, which its descendants (lerobot-env-so101) report instead of LeRobot's
#: ``is_success``: read where ``is_success`` is absent (lerobot-eval reads none, and scores 0).
GYM_HIL_SUCCESS = "succeed"


class LeRobotEnvError(ValueError):
    """An env type that cannot be made; the message is one line naming what was wrong."""


#: How an env plugin's distribution (and module) is named: ``lerobot_env_TYPE``.
ENV_PLUGIN_PREFIX = "lerobot_env_"


@functools.cache
def known_types() -> tuple[str, ...]:
    """Every env type LeRobot knows here, its built-in ones and those installed plugins add."""
    return _registered()[0]


def failed_plugins() -> dict[str, str]:
    """The installed ``lerobot_env_*`` plugins whose import raised: module -> its error, in
    one line. LeRobot logs each with a traceback and goes on without its types."""
    return _registered()[1]


@functools.cache
def _registered() -> tuple[tuple[str, ...], dict[str, str]]:
    from lerobot.envs.configs import EnvConfig
    from lerobot.utils.import_utils import register_third_party_plugins

    failures = _FailedImports()
    root = logging.getLogger()  # LeRobot logs through the root logger
    root.addFilter(failures)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            register_third_party_plugins()
    finally:
        root.removeFilter(failures)
    return tuple(sorted(EnvConfig.get_known_choices())), failures.failed


class _FailedImports(logging.Filter):
    """Takes the env plugins that LeRobot's plugin discovery could not import out of its log (a
    traceback each, which the error naming the type replaces): it logs each with the module's
    name as its argument and the exception."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: dict[str, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        module = record.args[0] if isinstance(record.args, tuple) and record.args else None
        if exc is not None and isinstance(module, str) and module.startswith(ENV_PLUGIN_PREFIX):
            self.failed[module] = one_line(exc)
            return False
        return True


def _unknown_type(env_type: str, types: Sequence[str]) -> str:
    """Why ``env_type`` is not registered: its plugin failed to import, or no plugin has it."""
    failed = failed_plugins()
    plugin = f"{ENV_PLUGIN_PREFIX}{env_type}"
    if plugin in failed:
        return (
            f"lerobot:{env_type}: the env plugin {plugin} is installed but failed to import "
            f"({failed[plugin]}); fix or reinstall it"
        )
    broken = "".join(
        f"; plugin {name} failed to import ({error})" for name, error in failed.items()
    )
    return (
        f"lerobot:{env_type}: LeRobot knows no env type {env_type!r}; known here: "
        f"{', '.join(types)} (an installed lerobot_env_* package adds its own){broken}"
    )


def make_config(env_type: str, task: str | None, args: Sequence[tuple[str, str]]) -> Any:
    """LeRobot's config of ``env_type``, its fields set as ``lerobot-eval --env.FIELD=VALUE``
    sets them (draccus), ``task`` first when given."""
    import draccus
    from lerobot.envs.configs import EnvConfig

    types = known_types()
    if env_type not in types:
        raise LeRobotEnvError(_unknown_type(env_type, types))
    cls = EnvConfig.get_choice_class(env_type)
    flags = [f"--task={task}"] if task is not None else []
    flags += [f"--{name}={value}" for name, value in args]
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            config = draccus.parse(config_class=cls, args=flags)
    except SystemExit:  # draccus's argparse exits on an unknown or malformed field
        fields = sorted(f for f in cls.__dataclass_fields__ if not f.startswith("_"))
        raise LeRobotEnvError(
            f"lerobot:{env_type}: LeRobot's config rejects {' '.join(flags) or 'its defaults'}; "
            f"its fields: {', '.join(fields)}"
        ) from None
    except Exception as exc:
        raise LeRobotEnvError(f"lerobot:{env_type}: LeRobot's config: {one_line(exc)}") from exc
    for name in POSITIVE_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, (int, float)) and not value > 0:
            raise LeRobotEnvError(f"lerobot:{env_type}: {name} is {value}, not a positive number")
    return config


#: Config fields that only make sense above zero (LeRobot's configs do not check them): a rate,
#: an image's size, an episode's length.
POSITIVE_FIELDS = ("fps", "observation_height", "observation_width", "episode_length")


def vector_envs(config: Any) -> dict[str, dict[Any, Any]]:
    """``create_envs(n_envs=1)``: one-env vectors by task group and task id."""
    if config.type in LIBERO_TYPES:
        prepare_libero(config.type)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # LeRobot prints each env it builds
            envs: dict[str, dict[Any, Any]] = config.create_envs(n_envs=1, use_async_envs=False)
    except Exception as exc:
        raise made_error(config.type, "create_envs", exc) from exc
    return envs


#: Types whose envs import LIBERO, which asks on stdin for its paths at its first import.
LIBERO_TYPES = ("libero", "libero_plus")


def prepare_libero(env_type: str) -> None:
    """Where LIBERO is installed, point it at its installed assets, as the project's own
    ``libero`` benchmark does (no prompt, no download); else ``create_envs`` says what is
    missing."""
    import importlib.util

    if importlib.util.find_spec("libero") is None:
        return
    from pytest_benchmarks.envs.libero.setup import LiberoSetupError, prepare

    try:
        prepare()
    except LiberoSetupError as exc:
        raise LeRobotEnvError(f"lerobot:{env_type}: {exc}") from None


def made_error(env_type: str, what: str, exc: BaseException) -> LeRobotEnvError:
    """The one line for an env LeRobot could not make: a missing simulator named as such."""
    if isinstance(exc, ModuleNotFoundError):
        missing = repr(exc.name) if exc.name else one_line(exc)
        return LeRobotEnvError(f"lerobot:{env_type}: its simulator is not installed ({missing})")
    if isinstance(exc, EOFError):  # LIBERO asks for its paths on stdin at its first import
        return LeRobotEnvError(
            f"lerobot:{env_type}: {what} asked a question on stdin (LIBERO's first-run prompt); "
            "this project's own LIBERO benchmark answers it: --benchmark-env=libero "
            "--benchmark-obs=lerobot gives LeRobot's layout"
        )
    return LeRobotEnvError(f"lerobot:{env_type}: {what}: {one_line(exc)}")


def close_all(envs: dict[str, dict[Any, Any]], keep: Any = None) -> None:
    """Close every vector but ``keep``."""
    for tasks in envs.values():
        for vector in tasks.values():
            if vector is not keep:
                with contextlib.suppress(Exception):
                    vector.close()


#: LeRobot's LIBERO env: the init state its next reset starts from.
INIT_STATE_ID = "init_state_id"


class HarnessProtocol(gym.Wrapper[Any, Any, Any, Any]):
    """One LeRobot env as the harness steps it (see the module's docstring)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        from lerobot.envs.utils import NEW_ROLLOUT_OPTION

        index = (options or {}).get("index")
        if index is not None and hasattr(self.env.unwrapped, INIT_STATE_ID):
            # lerobot-eval's episode i starts from LIBERO's init state i (sub-env j of n
            # starts at j and steps by n): the same here, whatever the batch size.
            setattr(self.env.unwrapped, INIT_STATE_ID, index)
        return self.env.reset(seed=seed, options={NEW_ROLLOUT_OPTION: True})

    def simulator_state(self) -> list[Any] | None:
        """What the initial-state digest reads (``core.initial_state``): the simulator's state
        found through LeRobot's env, and Meta-World's placement where there is one (many of
        its tasks place objects and goals through the model, which MuJoCo's state does not
        hold); None where no state is found."""
        arrays = initial_state.state_arrays(self.env)
        if arrays is None:
            return None
        placement = initial_state.find(self.env, PLACEMENT)
        return [*arrays, placement] if placement is not None else arrays

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["success"] = bool(info.get("is_success", info.get(GYM_HIL_SUCCESS, False)))
        return obs, reward, terminated, truncated, info


def make_env(config: Any, group: str, task_id: Any) -> gym.Env[Any, Any]:
    """The one env of task ``group``/``task_id``, from the config's own ``create_envs``."""
    envs = vector_envs(config)
    try:
        vector = envs[group][task_id]
    except KeyError:
        close_all(envs)
        raise LeRobotEnvError(
            f"lerobot:{config.type}: create_envs made no task {group}/{task_id}"
        ) from None
    close_all(envs, keep=vector)
    return HarnessProtocol(vector.envs[0])


def max_steps(env: gym.Env[Any, Any]) -> int:
    """The step limit ``lerobot-eval``'s rollout uses: the env's ``_max_episode_steps``."""
    limit = getattr(env, "_max_episode_steps", None) or getattr(
        env.unwrapped, "_max_episode_steps", None
    )
    if limit is None and env.spec is not None:
        limit = env.spec.max_episode_steps
    return int(limit or 0)


def description(env: gym.Env[Any, Any]) -> str:
    """The task's words, as ``lerobot-eval`` reads them (``task_description``, else ``task``)."""
    for name in ("task_description", "task"):
        with contextlib.suppress(AttributeError, NotImplementedError):
            value = env.get_wrapper_attr(name)
            if isinstance(value, str):
                return value
    return ""
