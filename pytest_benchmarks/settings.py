"""The ``--benchmark-*`` options: registration, ini equivalents and validation into Settings.

Every bad value becomes one line that names the option and what is valid, raised at configure
time, before any test is collected or any simulator is built.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks import registry
from pytest_benchmarks.policies import PolicySpecError, parse_spec
from pytest_benchmarks.stats import MODES as GATE_MODES

DEFAULT_EPISODES = 10
DEFAULT_SEED = 1000
DEFAULT_POLICY = "scripted"
DEFAULT_METRICS = "benchmark-results/metrics.json"
DEFAULT_GATE = "stat"
DEFAULT_ALPHA = 0.05
DEFAULT_PROGRESS_S = 10.0
VIDEO_MODES = ("none", "failures", "all")

GROUP = "benchmarks"
GROUP_HELP = "robot-policy simulation benchmarks (pytest-benchmarks)"

# option name -> (ini type, help); every option also reads the ini key with dashes as underscores.
OPTIONS: dict[str, tuple[str, str]] = {
    "--benchmark-env": (
        "string",
        "benchmarks to run, comma separated (default: every benchmark whose extra is installed)",
    ),
    "--benchmark-task": (
        "string",
        "tasks or groups to run, comma separated, e.g. push-v3,MT10 (default: the benchmark's own)",
    ),
    "--benchmark-episodes": ("string", f"episodes per task (default {DEFAULT_EPISODES})"),
    "--benchmark-batch-size": (
        "string",
        "envs stepped together per task; 0 = auto: floor(0.7 x CPUs per worker), "
        "capped by episodes and 64 (default 0)",
    ),
    "--benchmark-seed": ("string", f"base seed; episode i uses seed + i (default {DEFAULT_SEED})"),
    "--benchmark-policy": (
        "string",
        "policy spec: scripted (the benchmark's expert), scripted+noise:FRACTION (the expert "
        "with a random action in that fraction of steps), random or noop "
        f"(default {DEFAULT_POLICY})",
    ),
    "--benchmark-device": (
        "string",
        "where learned policies run: auto (cuda when available), cpu or cuda (default auto)",
    ),
    "--benchmark-max-steps": ("string", "episode step limit (default: the benchmark's own)"),
    "--benchmark-metrics": ("string", f"metrics JSON path (default {DEFAULT_METRICS})"),
    "--benchmark-obs": (
        "string",
        "observations: state (no rendering) or pixels (camera images too); "
        "default: the benchmark's own (LIBERO pixels, Meta-World state)",
    ),
    "--benchmark-image-size": ("string", "camera image size, N or HxW (default 128)"),
    "--benchmark-camera-map": (
        "string",
        "rename cameras, e.g. agentview_image=camera1,robot0_eye_in_hand_image=camera2",
    ),
    "--benchmark-settle-steps": (
        "string",
        "no-op steps after each reset before the policy acts (default: the benchmark's own)",
    ),
    "--benchmark-episode": (
        "string",
        "run exactly these episode indices (same seeds and initial states as in a full run), "
        "one env, in the test process, so a debugger and print() work",
    ),
    "--benchmark-video": (
        "string",
        "write an MP4 per episode: none, failures or all (default none), beside the metrics JSON",
    ),
    "--benchmark-progress": (
        "string",
        "seconds between progress lines of a running task (episodes done, successes); "
        "0 = after every episode (default 10)",
    ),
    "--benchmark-timeout": (
        "string",
        "seconds a task may take (env start-up and all its episodes); a task past it is stopped, "
        "its env workers killed, and it is recorded as timed out (default: no limit)",
    ),
    "--benchmark-shard": (
        "string",
        "run only shard I of N: the selected tasks, sorted by id, whose position mod N is I-1 "
        "(for CI matrices; join the shards' metrics with pytest-benchmarks merge)",
    ),
    "--benchmark-gate": (
        "string",
        "snapshot gate: stat (fail on a significant drop), exact (fail when any episode that "
        f"succeeded in the snapshot fails now) or off (default {DEFAULT_GATE})",
    ),
    "--benchmark-alpha": (
        "string",
        "significance level of the stat gate for the whole session, split over the tasks "
        f"compared (Bonferroni) (default {DEFAULT_ALPHA})",
    ),
}

OBS_MODES = ("state", "pixels")

METAVARS = {
    "--benchmark-env": "NAME[,NAME]",
    "--benchmark-task": "TASK[,TASK]",
    "--benchmark-episodes": "N",
    "--benchmark-batch-size": "N",
    "--benchmark-seed": "N",
    "--benchmark-policy": "SPEC",
    "--benchmark-device": "{auto,cpu,cuda}",
    "--benchmark-max-steps": "N",
    "--benchmark-metrics": "PATH",
    "--benchmark-obs": "{state,pixels}",
    "--benchmark-image-size": "N|HxW",
    "--benchmark-camera-map": "CAM=NAME[,...]",
    "--benchmark-settle-steps": "N",
    "--benchmark-episode": "I[,J...]",
    "--benchmark-video": "{none,failures,all}",
    "--benchmark-progress": "SECONDS",
    "--benchmark-timeout": "SECONDS",
    "--benchmark-shard": "I/N",
    "--benchmark-gate": "{stat,exact,off}",
    "--benchmark-alpha": "LEVEL",
}


def add_options(parser: pytest.Parser) -> None:
    """Register the options in their own ``--help`` group, beside pytest-benchmark's."""
    group = parser.getgroup(GROUP, GROUP_HELP)
    for flag, (ini_type, text) in OPTIONS.items():
        dest = _dest(flag)
        group.addoption(flag, dest=dest, default=None, metavar=METAVARS[flag], help=text)
        parser.addini(dest, text, type=ini_type, default=None)  # type: ignore[arg-type]
    group.addoption(
        "--benchmark-sync",
        dest="benchmark_sync",
        action="store_true",
        default=None,
        help="step every env in this process (SyncVectorEnv), never in worker processes",
    )
    parser.addini("benchmark_sync", "like --benchmark-sync", type="bool", default=False)
    group.addoption(
        "--benchmark-debug",
        dest="benchmark_debug",
        action="store_true",
        default=None,
        help="batch size 1, no worker processes, and a per-step trace (action, reward, success) "
        "in a JSON Lines file per task beside the metrics JSON",
    )
    parser.addini("benchmark_debug", "like --benchmark-debug", type="bool", default=False)


@dataclass(frozen=True)
class Settings:
    """Validated benchmark options for one pytest session."""

    envs: tuple[str, ...] | None
    tasks: tuple[str, ...] | None
    episodes: int
    batch_size: int
    sync: bool
    seed: int
    policy: str
    max_steps: int | None
    metrics: Path
    obs: str | None = None
    image_size: tuple[int, int] = (128, 128)
    camera_map: tuple[tuple[str, str], ...] = ()
    settle_steps: int | None = None
    gate: str = DEFAULT_GATE
    alpha: float = DEFAULT_ALPHA
    shard: tuple[int, int] | None = None
    timeout: float | None = None
    #: Episode indices to run instead of range(episodes).
    episode_indices: tuple[int, ...] | None = None
    video: str = "none"
    progress_s: float = DEFAULT_PROGRESS_S
    debug: bool = False
    device: str = "auto"

    @property
    def indices(self) -> tuple[int, ...]:
        """The episode indices each task runs."""
        return self.episode_indices or tuple(range(self.episodes))

    def as_dict(self) -> dict[str, Any]:
        return {
            "envs": list(self.envs) if self.envs else None,
            "tasks": list(self.tasks) if self.tasks else None,
            "episodes": self.episodes,
            "batch_size": self.batch_size,
            "sync": self.sync,
            "seed": self.seed,
            "policy": self.policy,
            "max_steps": self.max_steps,
            "obs": self.obs,
            "image_size": list(self.image_size),
            "camera_map": dict(self.camera_map),
            "settle_steps": self.settle_steps,
            "gate": self.gate,
            "alpha": self.alpha,
            "shard": list(self.shard) if self.shard else None,
            "timeout": self.timeout,
            "episode_indices": list(self.episode_indices) if self.episode_indices else None,
            "video": self.video,
            "debug": self.debug,
            "device": self.device,
        }


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def _raw(config: pytest.Config, flag: str) -> Any:
    dest = _dest(flag)
    value = config.getoption(dest)
    if value is None:
        value = config.getini(dest)
    return value if value not in ("", None) else None


def _parse_int(flag: str, value: Any, minimum: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum:
        raise pytest.UsageError(f"{flag}: {value!r} is not an integer >= {minimum}")
    return number


def _integer(config: pytest.Config, flag: str, default: int, minimum: int) -> int:
    value = _raw(config, flag)
    return default if value is None else _parse_int(flag, value, minimum)


def _optional_integer(config: pytest.Config, flag: str, minimum: int) -> int | None:
    value = _raw(config, flag)
    return None if value is None else _parse_int(flag, value, minimum)


def _choice(config: pytest.Config, flag: str, valid: tuple[str, ...]) -> str | None:
    value = _raw(config, flag)
    if value is not None and value not in valid:
        raise pytest.UsageError(f"{flag}: {value!r} is not one of {', '.join(valid)}")
    return value


DEVICES = ("auto", "cpu", "cuda")


def _check_policy_source(kind: str, argument: str) -> None:
    """What can be known before any test runs: the checkpoint is there, its libraries are."""
    import importlib.util

    if kind in ("hub", "local"):
        for module, extra in (("torch", "policies"), ("huggingface_hub", "policies")):
            if importlib.util.find_spec(module) is None:
                raise pytest.UsageError(
                    f"--benchmark-policy: {kind} policies need {module}: "
                    f"pip install 'pytest-benchmarks[{extra}]'"
                )
    if kind == "local":
        folder = Path(os.path.expanduser(argument))
        if not (folder / "config.json").is_file():
            what = "no directory" if not folder.is_dir() else "a directory without config.json"
            raise pytest.UsageError(
                f"--benchmark-policy: {argument} is {what}; a checkpoint directory holds "
                "config.json and model.safetensors (save_pretrained)"
            )
    if kind == "lerobot":
        from pytest_benchmarks.policies.sources import lerobot_missing

        problem = lerobot_missing()
        if problem:
            raise pytest.UsageError(f"--benchmark-policy: lerobot:{argument}: {problem}")


def _check_device(device: str) -> None:
    if device != "cuda":
        return
    try:
        import torch
    except ImportError:
        raise pytest.UsageError(
            "--benchmark-device: cuda needs torch: pip install 'pytest-benchmarks[policies]'"
        ) from None
    if not torch.cuda.is_available():
        raise pytest.UsageError("--benchmark-device: cuda, but torch sees no CUDA device; use cpu")


def _number(
    flag: str, value: Any, default: float | None, accept: Callable[[float], bool], expected: str
) -> float | None:
    """A float option; ``accept`` says which values are valid (NaN never is)."""
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not accept(number):
        raise pytest.UsageError(f"{flag}: {value!r} is not {expected}")
    return number


def _indices(value: Any) -> tuple[int, ...] | None:
    parts = _names(value)
    if parts is None:
        return None
    if not all(p.isdigit() for p in parts):
        raise pytest.UsageError(
            f"--benchmark-episode: {value!r} is not a list of episode indices >= 0 (e.g. 3,7)"
        )
    return tuple(sorted({int(p) for p in parts}))


def _shard(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    index, sep, count = str(value).partition("/")
    if sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return (int(index), int(count))
    raise pytest.UsageError(f"--benchmark-shard: {value!r} is not I/N with 1 <= I <= N (e.g. 2/4)")


def _image_size(value: Any) -> tuple[int, int]:
    if value is None:
        return (128, 128)
    parts = str(value).lower().split("x")
    if len(parts) in (1, 2) and all(p.isdigit() and int(p) > 0 for p in parts):
        height, width = int(parts[0]), int(parts[-1])
        return (height, width)
    raise pytest.UsageError(f"--benchmark-image-size: {value!r} is not N or HxW (e.g. 224x224)")


def _camera_map(value: Any) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in _names(value) or ():
        source, sep, target = item.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise pytest.UsageError(
                f"--benchmark-camera-map: {item!r} is not ENV_CAMERA=NAME "
                "(e.g. agentview_image=camera1)"
            )
        pairs.append((source.strip(), target.strip()))
    return tuple(pairs)


def _names(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = tuple(part.strip() for part in str(value).split(",") if part.strip())
    return items or None


def load(config: pytest.Config, check: Callable[[Path], None] | None = None) -> Settings:
    """Read and validate the options; ``check`` may further vet the metrics path."""
    envs = _names(_raw(config, "--benchmark-env"))
    for name in envs or ():
        if name not in registry.names():
            raise pytest.UsageError(
                f"--benchmark-env: unknown benchmark {name!r}; valid: {', '.join(registry.names())}"
            )
    policy = str(_raw(config, "--benchmark-policy") or DEFAULT_POLICY)
    try:
        kind, argument = parse_spec(policy)
    except PolicySpecError as exc:
        raise pytest.UsageError(f"--benchmark-policy: {exc}") from None
    _check_policy_source(kind, argument)
    device = _choice(config, "--benchmark-device", DEVICES) or "auto"
    _check_device(device)
    metrics_value = _raw(config, "--benchmark-metrics")
    if metrics_value is None:
        metrics = config.rootpath / DEFAULT_METRICS
    else:
        metrics = Path(os.path.expanduser(str(metrics_value))).absolute()
    settings = Settings(
        envs=envs,
        tasks=_names(_raw(config, "--benchmark-task")),
        episodes=_integer(config, "--benchmark-episodes", DEFAULT_EPISODES, 1),
        batch_size=_integer(config, "--benchmark-batch-size", 0, 0),
        sync=bool(config.getoption("benchmark_sync") or config.getini("benchmark_sync")),
        seed=_integer(config, "--benchmark-seed", DEFAULT_SEED, 0),
        policy=policy,
        max_steps=_optional_integer(config, "--benchmark-max-steps", 1),
        metrics=metrics,
        obs=_choice(config, "--benchmark-obs", OBS_MODES),
        image_size=_image_size(_raw(config, "--benchmark-image-size")),
        camera_map=_camera_map(_raw(config, "--benchmark-camera-map")),
        settle_steps=_optional_integer(config, "--benchmark-settle-steps", 0),
        gate=_choice(config, "--benchmark-gate", GATE_MODES) or DEFAULT_GATE,
        alpha=_number(
            "--benchmark-alpha",
            _raw(config, "--benchmark-alpha"),
            DEFAULT_ALPHA,
            lambda x: 0 < x < 1,
            "a level between 0 and 1 (e.g. 0.05)",
        )
        or DEFAULT_ALPHA,
        shard=_shard(_raw(config, "--benchmark-shard")),
        timeout=_number(
            "--benchmark-timeout",
            _raw(config, "--benchmark-timeout"),
            None,
            lambda x: 0 < x < math.inf,
            "a number of seconds > 0",
        ),
        episode_indices=_indices(_raw(config, "--benchmark-episode")),
        video=_choice(config, "--benchmark-video", VIDEO_MODES) or "none",
        progress_s=_number(
            "--benchmark-progress",
            _raw(config, "--benchmark-progress"),
            DEFAULT_PROGRESS_S,
            lambda x: 0 <= x < math.inf,
            "a number of seconds >= 0",
        )
        or 0.0,
        debug=bool(config.getoption("benchmark_debug") or config.getini("benchmark_debug")),
        device=device,
    )
    if check is not None:
        check(settings.metrics)
    return settings
