"""Learned policies from outside the harness: the Hub, a local checkpoint, LeRobot, or a
factory in the user's own module. Each loads once per task and reports its identity (source,
id, and the Hub commit or the checkpoint's file hash) for the metrics JSON."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_benchmarks.core.errors import one_line, short
from pytest_benchmarks.core.features import check_features
from pytest_benchmarks.core.files import file_hash
from pytest_benchmarks.core.policy_spec import (
    Loading,
    checkpoint_file,
    lerobot_missing,
    names_directory,
)
from pytest_benchmarks.policies.hub import PolicySourceError, hub_snapshot

if TYPE_CHECKING:
    from pytest_benchmarks.core.features import Feature
    from pytest_benchmarks.core.policy import Policy
    from pytest_benchmarks.core.tasks import EnvConfig
    from pytest_benchmarks.policies.lerobot import Checkpoint


def torch_checkpoint(
    folder: Path,
    identity: dict[str, str | None],
    config: EnvConfig,
    features: dict[str, Feature],
    num_envs: int,
    device: str,
) -> Policy:
    from pytest_benchmarks.policies.torch_policy import (
        PolicyLoadError,
        TorchPolicy,
        load_pretrained,
    )

    try:
        model = load_pretrained(folder, device)
    except PolicyLoadError as exc:
        raise PolicySourceError(str(exc)) from None
    wanted = dict(getattr(model, "input_features", {}) or {})
    name = f"{identity['source']}:{identity['id']}"
    pad = check_features(name, config.task.id, wanted, features)
    return TorchPolicy(model, num_envs, device, identity, [(k, tuple(wanted[k])) for k in pad])


def local_policy(
    argument: str, config: EnvConfig, features: dict[str, Feature], num_envs: int, device: str
) -> Policy:
    folder = Path(argument).expanduser().resolve()
    weights = folder / "model.safetensors"
    revision = file_hash(weights) if weights.is_file() else None
    identity = {"source": "local", "id": str(folder), "revision": revision}
    return torch_checkpoint(folder, identity, config, features, num_envs, device)


def hub_policy(
    argument: str, config: EnvConfig, features: dict[str, Feature], num_envs: int, device: str
) -> Policy:
    folder, repo_id, commit = hub_snapshot(argument)
    identity: dict[str, str | None] = {"source": "hub", "id": repo_id, "revision": commit}
    return torch_checkpoint(folder, identity, config, features, num_envs, device)


def module_policy(argument: str, config: EnvConfig, num_envs: int) -> Policy:
    """``package.module:factory``; ``factory(config, num_envs)`` returns the policy."""
    from pytest_benchmarks.core.policy import Policy

    module_name, _, factory_name = argument.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicySourceError(f"module:{argument}: cannot import {module_name} ({exc})") from None
    except (Exception, SystemExit) as exc:  # the module's own code failed (or exited)
        raise PolicySourceError(
            f"module:{argument}: importing {module_name} raised {one_line(exc)}"
        ) from None
    if not hasattr(module, factory_name):
        raise PolicySourceError(f"module:{argument}: {module_name} has no {factory_name}")
    factory = getattr(module, factory_name)
    if not callable(factory):  # a policy instance too: each task's slots need their own
        raise PolicySourceError(
            f"module:{argument}: {module_name}.{factory_name} is {type(factory).__name__} "
            f"{short(factory, 40)}, not a factory; expected a function or class, called as "
            f"{factory_name}(config, num_envs), that returns a Policy"
        )
    try:
        policy = factory(config, num_envs)
    except (Exception, SystemExit) as exc:
        raise PolicySourceError(
            f"module:{argument}: {factory_name}(config, num_envs) raised {one_line(exc)}"
        ) from None
    if policy is None:
        raise PolicySourceError(
            f"module:{argument}: {factory_name}(config, num_envs) returned None, not a Policy "
            "(an object with reset, act and identity; see pytest_benchmarks.policies.Policy)"
        )
    if not isinstance(policy, Policy):
        missing = [
            m for m in ("reset", "act", "identity") if not callable(getattr(policy, m, None))
        ]
        raise PolicySourceError(
            f"module:{argument}: {factory_name}() returned {type(policy).__name__}, which lacks "
            f"{', '.join(missing)} (see pytest_benchmarks.policies.Policy)"
        )
    return policy


def lerobot_checkpoint(argument: str, loading: Loading) -> Checkpoint:
    """A LeRobot checkpoint's config, read (no weights): a checkpoint directory, or
    ``REPO_ID[@REVISION]`` on the Hub (through huggingface_hub's cache, like ``hub:``)."""
    problem = lerobot_missing()
    if problem:
        raise PolicySourceError(f"lerobot:{argument}: {problem}")
    from pytest_benchmarks.policies.lerobot import Checkpoint, LeRobotLoadError

    folder = Path(argument).expanduser()
    file = checkpoint_file(argument)
    if file is not None:
        raise PolicySourceError(f"lerobot:{file}")
    if folder.is_dir():
        folder = folder.resolve()
        weights = folder / "model.safetensors"
        revision = file_hash(weights) if weights.is_file() else None
        identity = {"source": "lerobot", "id": str(folder), "revision": revision}
    elif names_directory(argument):
        raise PolicySourceError(f"lerobot:{argument}: no such directory")
    else:
        folder, repo_id, commit = hub_snapshot(argument, f"lerobot:{argument}")
        identity = {"source": "lerobot", "id": repo_id, "revision": commit}
    try:
        return Checkpoint.read(folder, identity, loading)
    except LeRobotLoadError as exc:
        raise PolicySourceError(str(exc)) from None


def lerobot_policy(
    argument: str, config: EnvConfig, features: dict[str, Feature], num_envs: int, loading: Loading
) -> Policy:
    """A LeRobot pretrained policy (``lerobot_checkpoint``) with its processors."""
    from pytest_benchmarks.policies.lerobot import LeRobotLoadError, LeRobotPolicy

    checkpoint = lerobot_checkpoint(argument, loading)
    try:
        return LeRobotPolicy.fitted(checkpoint, config, features, num_envs, loading)
    except LeRobotLoadError as exc:
        raise PolicySourceError(str(exc)) from None
