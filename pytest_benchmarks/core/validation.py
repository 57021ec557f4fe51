"""Validation of every ``--benchmark-*`` value, for the plugin and for ``pytest_benchmarks.api``.

Each bad value becomes one line that names the option and what is valid (``OptionError``);
``build`` takes typed values (the API) or the flags' strings (the plugin, through
``settings``). The choices that depend on the selection (observation modes, cameras,
rendering, videos, recording) are checked in ``core.selection`` once the tasks are resolved.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.declared import declared_images
from pytest_benchmarks.core.files import check_writable, parts_dir
from pytest_benchmarks.core.policy_spec import (
    PolicySpecError,
    is_local_path,
    lerobot_missing,
    parse_spec,
)
from pytest_benchmarks.core.settings import (
    DEFAULT_ALPHA,
    DEFAULT_EPISODES,
    DEFAULT_GATE,
    DEFAULT_METRICS,
    DEFAULT_POLICY,
    DEFAULT_PROGRESS_S,
    DEFAULT_SEED,
    DEVICES,
    GATE_MODES,
    GATE_POWER,
    OBS_MODES,
    RECORD_ONLY,
    RENDER_MODES,
    VIDEO_MODES,
    Settings,
)
from pytest_benchmarks.core.tasks import DEFAULT_IMAGE_SIZE, did_you_mean


class OptionError(ValueError):
    """A bad option value; the message is one line starting with the option's name."""


#: Upper bounds: seeds stay within numpy's and the simulators' 32-bit range after adding the
#: episode index; a plan of more episodes than this is a typo, not a benchmark.
MAX_SEED = 2**31 - 1
MAX_EPISODES = 1_000_000


def _parse_int(flag: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        number = minimum - 1
    too_big = maximum is not None and number > maximum
    if number < minimum or too_big or (isinstance(value, float) and not value.is_integer()):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
        raise OptionError(f"{flag}: {str(value)[:40]!r} is not an integer {bound}")
    return number


def _integer(flag: str, value: Any, default: int, minimum: int, maximum: int | None = None) -> int:
    return default if value is None else _parse_int(flag, value, minimum, maximum)


def _optional_integer(flag: str, value: Any, minimum: int) -> int | None:
    return None if value is None else _parse_int(flag, value, minimum)


def _choice(flag: str, value: Any, valid: tuple[str, ...], default: str) -> str:
    if value is None:
        return default
    if value not in valid:
        raise OptionError(f"{flag}: {value!r} is not one of {', '.join(valid)}")
    return str(value)


def _check_policy_source(kind: str, argument: str) -> None:
    """What can be known before any test runs: the checkpoint is there, its libraries are."""
    if kind in ("hub", "local"):
        for module, extra in (("torch", "policies"), ("huggingface_hub", "policies")):
            if importlib.util.find_spec(module) is None:
                raise OptionError(
                    f"--benchmark-policy: {kind} policies need {module}: "
                    f"pip install 'pytest-benchmarks[{extra}]'"
                )
    if kind == "local":
        folder = Path(os.path.expanduser(argument))
        if not (folder / "config.json").is_file():
            what = "no directory" if not folder.is_dir() else "a directory without config.json"
            raise OptionError(
                f"--benchmark-policy: {argument} is {what}; a checkpoint directory holds "
                "config.json and model.safetensors (save_pretrained)"
            )
    if kind == "lerobot":
        problem = lerobot_missing()
        if problem:
            raise OptionError(f"--benchmark-policy: lerobot:{argument}: {problem}")
        folder = Path(os.path.expanduser(argument))
        if is_local_path(argument) and not folder.is_dir():
            raise OptionError(f"--benchmark-policy: lerobot:{argument}: no such directory")


def _check_device(device: str) -> None:
    if device != "cuda":
        return
    try:
        import torch
    except ImportError:
        raise OptionError(
            "--benchmark-device: cuda needs torch: pip install 'pytest-benchmarks[policies]'"
        ) from None
    if not torch.cuda.is_available():
        raise OptionError("--benchmark-device: cuda, but torch sees no CUDA device; use cpu")


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
        raise OptionError(f"{flag}: {value!r} is not {expected}")
    return number


def _indices(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, (list, tuple, range)):
        value = ",".join(map(str, value))
    parts = _names(value)
    if parts is None:
        return None
    if not all(p.isdigit() for p in parts):
        raise OptionError(
            f"--benchmark-episode: {value!r} is not a list of episode indices >= 0 (e.g. 3,7)"
        )
    return tuple(sorted({int(p) for p in parts}))


def _shard(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    index, sep, count = str(value).partition("/")
    if sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return (int(index), int(count))
    raise OptionError(f"--benchmark-shard: {value!r} is not I/N with 1 <= I <= N (e.g. 2/4)")


def _image_size(value: Any) -> tuple[int, int]:
    if value is None:
        return DEFAULT_IMAGE_SIZE
    if isinstance(value, tuple):
        value = "x".join(map(str, value))
    parts = str(value).lower().split("x")
    if len(parts) in (1, 2) and all(p.isdigit() and int(p) > 0 for p in parts):
        height, width = int(parts[0]), int(parts[-1])
        return (height, width)
    raise OptionError(f"--benchmark-image-size: {value!r} is not N or HxW (e.g. 224x224)")


def _pairs(flag: str, value: Any, example: str) -> tuple[tuple[str, str], ...]:
    """``A=B,C=D``, a mapping, or a JSON object as LeRobot's own flags take it
    (``'{"A": "B"}'``, pasted from a ``lerobot-eval`` command): (source, target) pairs."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise OptionError(f"{flag}: not a JSON object ({exc}); e.g. {example}") from None
        if not all(isinstance(v, str) for v in value.values()):
            raise OptionError(f"{flag}: the JSON object's values must be names; e.g. {example}")
    if isinstance(value, Mapping):
        value = ",".join(f"{source}={target}" for source, target in value.items())
    pairs = []
    for item in _names(value) or ():
        source, sep, target = item.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise OptionError(f"{flag}: {item!r} is not OLD=NEW; e.g. {example}")
        pairs.append((source.strip(), target.strip()))
    return tuple(pairs)


def _camera_map(value: Any) -> tuple[tuple[str, str], ...]:
    return _pairs(
        "--benchmark-camera-map",
        value,
        'agentview_image=camera1 or \'{"agentview_image": "camera1"}\'',
    )


def _rename_map(value: Any) -> tuple[tuple[str, str], ...]:
    return _pairs(
        "--benchmark-rename-map",
        value,
        '\'{"observation.image": "observation.images.camera1"}\'',
    )


def _names(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    items = tuple(part.strip() for part in str(value).split(",") if part.strip())
    return items or None


def _key(flag: str) -> str:
    """``--benchmark-max-steps`` -> ``max_steps``: the parameter of ``build`` a flag sets."""
    return flag.removeprefix("--benchmark-").replace("-", "_")


def settings(raw: Mapping[str, Any], root: Path) -> Settings:
    """Validate the plugin's raw option values (flag -> value, as ``options.read`` gives)."""
    return build(root=root, **{_key(flag): value for flag, value in raw.items()})


def build(
    *,
    root: Path,
    env: str | Sequence[str] | None = None,
    task: str | Sequence[str] | None = None,
    episodes: int | str | None = None,
    batch_size: int | str | None = None,
    sync: bool = False,
    seed: int | str | None = None,
    policy: str | None = None,
    max_steps: int | str | None = None,
    metrics: str | Path | None = None,
    obs: str | None = None,
    image_size: int | str | tuple[int, int] | None = None,
    render: str | None = None,
    camera_map: str | Mapping[str, str] | None = None,
    rename_map: str | Mapping[str, str] | None = None,
    settle_steps: int | str | None = None,
    gate: str | None = None,
    alpha: float | str | None = None,
    gate_power: str | None = None,
    snapshot_replace: bool = False,
    shard: str | None = None,
    timeout: float | str | None = None,
    episode: str | Sequence[int] | None = None,
    video: str | None = None,
    progress: float | str | None = None,
    debug: bool = False,
    device: str | None = None,
    record: str | Path | None = None,
    record_only: str | None = None,
    resume: bool = False,
    batched_inference: bool = False,
) -> Settings:
    """Settings from typed values or the flags' strings, each checked as its ``--benchmark-*``
    option is (one-line ``OptionError``); None is the option's default.

    The plugin calls it through ``settings``; ``pytest_benchmarks.api.evaluate`` directly. A
    relative metrics path is taken from ``root``, the directory the run is anchored in.
    """
    envs = _names(env)
    for name in envs or ():
        if name not in catalog.names():
            raise OptionError(
                f"--benchmark-env: unknown benchmark {name!r}"
                f"{did_you_mean(name, catalog.names())}; valid: {', '.join(catalog.names())}"
            )
    spec = str(policy or DEFAULT_POLICY)
    try:
        kind, argument = parse_spec(spec)
    except PolicySpecError as exc:
        raise OptionError(f"--benchmark-policy: {exc}") from None
    _check_policy_source(kind, argument)
    if batched_inference and kind != "lerobot":
        raise OptionError(
            "--benchmark-batched-inference: only lerobot: policies share forward passes across "
            f"slots (--benchmark-policy is {spec}); drop the flag or use a lerobot: policy"
        )
    chosen_device = _choice("--benchmark-device", device, DEVICES, "auto")
    _check_device(chosen_device)
    if metrics is None:
        metrics_path = root / DEFAULT_METRICS
    else:
        metrics_path = Path(os.path.expanduser(str(metrics))).absolute()
    chosen_obs = None if obs is None else _choice("--benchmark-obs", obs, OBS_MODES, "")
    size, size_from = _image_size(image_size), None
    declared = declared_images(argument) if kind == "lerobot" and image_size is None else None
    if declared is not None:
        size = declared.size
        cameras = f"{declared.cameras} camera{'s' * (declared.cameras != 1)}"
        size_from = f"{spec}'s config.json ({cameras})"
    return Settings(
        envs=envs,
        tasks=_names(task),
        episodes=_integer("--benchmark-episodes", episodes, DEFAULT_EPISODES, 1, MAX_EPISODES),
        batch_size=_integer("--benchmark-batch-size", batch_size, 0, 0),
        sync=bool(sync),
        seed=_integer("--benchmark-seed", seed, DEFAULT_SEED, 0, MAX_SEED),
        policy=spec,
        max_steps=_optional_integer("--benchmark-max-steps", max_steps, 1),
        metrics=metrics_path,
        obs=chosen_obs,
        image_size=size,
        image_size_from=size_from,
        render=_choice("--benchmark-render", render, RENDER_MODES, "faithful"),
        camera_map=_camera_map(camera_map),
        rename_map=_rename_map(rename_map),
        settle_steps=_optional_integer("--benchmark-settle-steps", settle_steps, 0),
        gate=_choice("--benchmark-gate", gate, GATE_MODES, DEFAULT_GATE),
        alpha=_number(
            "--benchmark-alpha",
            alpha,
            DEFAULT_ALPHA,
            lambda x: 0 < x < 1,
            "a level between 0 and 1 (e.g. 0.05)",
        )
        or DEFAULT_ALPHA,
        gate_power=_choice("--benchmark-gate-power", gate_power, GATE_POWER, "warn"),
        snapshot_replace=bool(snapshot_replace),
        shard=_shard(shard),
        timeout=_number(
            "--benchmark-timeout",
            timeout,
            None,
            lambda x: 0 < x < math.inf,
            "a number of seconds > 0",
        ),
        episode_indices=_indices(episode),
        video=_choice("--benchmark-video", video, VIDEO_MODES, "none"),
        progress_s=_number(
            "--benchmark-progress",
            progress,
            DEFAULT_PROGRESS_S,
            lambda x: 0 <= x < math.inf,
            "a number of seconds >= 0",
        )
        or 0.0,
        debug=bool(debug),
        device=chosen_device,
        record=_record_dir(record),
        record_only=_choice("--benchmark-record-only", record_only, RECORD_ONLY, "all"),
        resume=bool(resume),
        batched_inference=bool(batched_inference),
    )


def _record_dir(value: Any) -> Path | None:
    if value in (None, ""):
        return None
    return Path(os.path.expanduser(str(value))).absolute()


def check_record_path(path: Path | None, resume: bool = False) -> None:
    """A new directory for the dataset (LeRobot's writer creates it, and never merges into an
    old one), with no parts left from an earlier run beside it. Checked by the process that
    builds the dataset, before any episode runs."""
    if path is None:
        return
    if path.is_symlink() and not path.exists():
        raise OptionError(
            f"--benchmark-record: {path} is a dangling symbolic link (to {os.readlink(path)}); "
            "give a new directory for the dataset"
        )
    if path.exists():
        raise OptionError(
            f"--benchmark-record: {path} already exists; give a new directory for the dataset"
        )
    try:
        check_writable(path)
    except OSError as exc:
        raise OptionError(f"--benchmark-record: cannot write {path}: {exc}") from None
    parts = parts_dir(path)
    if parts.exists() and not resume:
        raise OptionError(
            f"--benchmark-record: {parts} holds the episodes of an earlier run that was not "
            "built into a dataset; carry that run on with --benchmark-resume, build it with "
            "`pytest-benchmarks record-build` or remove it"
        )


def check_metrics_path(path: Path) -> None:
    """The metrics file must be writable: a run must not end with nowhere to put its results."""
    try:
        check_writable(path)
    except OSError as exc:
        raise OptionError(f"--benchmark-metrics: cannot write {path}: {exc}") from None
