"""Validation of every ``--benchmark-*`` value, for the plugin and for ``pytest_benchmarks.api``.

Each value is read by its option's parser in the registry (``core.settings.OPTIONS``); a bad
one becomes one line that names the option and what is valid (``OptionError``). ``build``
takes typed values (the API) or the flags' strings (the plugin, through ``settings``), by
setting name. What depends on more than one value is checked here; what depends on the
selection (observation modes, cameras, rendering, videos, recording) in ``core.selection`` once
the tasks are resolved.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.files import check_writable, lock_holder, parts_dir
from pytest_benchmarks.core.policy_spec import PolicySpec, checkpoint_file, lerobot_missing
from pytest_benchmarks.core.settings import (
    DEFAULT_METRICS,
    DEFAULT_SOURCE,
    MAX_EPISODES,
    MAX_SEED,
    OPTION_SOURCE,
    OPTIONS,
    Settings,
    check_cuda_here,
)
from pytest_benchmarks.core.values import OptionError

__all__ = ["MAX_EPISODES", "MAX_SEED", "OptionError", "build", "settings"]

BY_FLAG = {option.flag: option for option in OPTIONS}
BY_KEY = {option.key: option for option in OPTIONS}


def settings(raw: Mapping[str, Any], root: Path) -> Settings:
    """Validate the plugin's raw option values (flag -> value, as ``options.read`` gives)."""
    return build(root=root, **{BY_FLAG[flag].key: value for flag, value in raw.items()})


def build(*, root: Path, **given: Any) -> Settings:
    """Settings from typed values or the flags' strings, by option name (``max_steps`` for
    ``--benchmark-max-steps``), each read by its option's parser (one-line ``OptionError``); a
    value left out or None is the option's default.

    The plugin calls it through ``settings``; ``pytest_benchmarks.api.evaluate`` directly. A
    relative metrics path is taken from ``root``, the directory the run is anchored in.
    """
    unknown = sorted(set(given) - set(BY_KEY))
    if unknown:
        raise TypeError(f"build() got unknown options {', '.join(unknown)}")
    chosen = {
        option.field: option.parse(option.flag, given[option.key])
        for option in OPTIONS
        if given.get(option.key) is not None
    }
    chosen.setdefault("metrics", root / DEFAULT_METRICS)
    source = OPTION_SOURCE if "image_size" in chosen else DEFAULT_SOURCE
    result = Settings(**chosen, image_size_from=source)
    _check_policy_source(result.policy)
    if result.device == "cuda" and result.ray is None:  # on Ray, the cluster's nodes decide
        check_cuda_here()
    if result.ray is not None:
        _check_ray(result)
    if result.batched_inference and not result.policy.is_lerobot:
        raise OptionError(
            "--benchmark-batched-inference: only lerobot: policies share forward passes across "
            f"slots (--benchmark-policy is {result.policy}); drop the flag or use a lerobot: "
            "policy"
        )
    if result.policy_server == "on" and not result.policy.is_lerobot:
        raise OptionError(
            "--benchmark-policy-server=on: only lerobot: policies are served "
            f"(--benchmark-policy is {result.policy}); use auto or off, or a lerobot: policy"
        )
    if result.sequential and result.gate != "stat":
        raise OptionError(
            f"--benchmark-sequential: stops a task when the stat gate is decided; "
            f"--benchmark-gate is {result.gate}; use --benchmark-gate=stat or drop the flag"
        )
    if result.sequential and result.batch_size > result.planned:
        raise OptionError(
            f"--benchmark-sequential: the most a task runs ({result.planned} episodes) is less "
            f"than one block of --benchmark-batch-size={result.batch_size}; give more episodes "
            "or a smaller batch"
        )
    if result.rename_map and not result.policy.is_lerobot:
        raise OptionError(
            "--benchmark-rename-map: renames a lerobot: policy's inputs (its pre-processor); "
            f"--benchmark-policy is {result.policy}; drop the option or use a lerobot: policy"
        )
    return result


def _check_ray(result: Settings) -> None:
    """What a run on Ray cannot do: one env in this process (a debugger's)."""
    if result.single_env:
        raise OptionError(
            "--benchmark-ray: --benchmark-debug and --benchmark-episode run one env in this "
            "process (for a debugger); drop --benchmark-ray or them"
        )


def _check_policy_source(spec: PolicySpec) -> None:
    """What can be known before any test runs: the checkpoint is there, its libraries are."""
    kind, argument = spec.kind, spec.argument
    if kind in ("hub", "local"):
        for module, extra in (("torch", "policies"), ("huggingface_hub", "policies")):
            if importlib.util.find_spec(module) is None:
                raise OptionError(
                    f"--benchmark-policy: {kind} policies need {module}: "
                    f"pip install 'pytest-benchmarks[{extra}]'"
                )
    if kind in ("local", "lerobot"):
        file = checkpoint_file(argument)
        if file is not None:
            raise OptionError(f"--benchmark-policy: {'lerobot:' * spec.is_lerobot}{file}")
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
            raise OptionError(f"--benchmark-policy: {spec}: {problem}")
        if spec.local and not Path(os.path.expanduser(argument)).is_dir():
            raise OptionError(f"--benchmark-policy: {spec}: no such directory")


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
    holder = lock_holder(path) if parts.exists() else None
    if holder is not None:
        raise OptionError(
            f"--benchmark-record: {path} is in use by another session (PID {holder or 'unknown'}), "
            f"which is recording into {parts}; give this one another directory, or wait for that "
            "one to end"
        )
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
