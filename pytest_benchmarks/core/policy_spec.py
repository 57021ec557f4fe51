"""``--benchmark-policy`` specs: their syntax, checked without importing any policy library."""

from __future__ import annotations

import importlib.util
import os

KINDS = ("scripted", "scripted+noise", "random", "noop", "hub", "lerobot", "module", "local")

#: Specs built on the benchmark's scripted expert.
EXPERT_KINDS = ("scripted", "scripted+noise")

VALID = (
    "scripted, scripted+noise:FRACTION, random, noop, hub:REPO_ID[@REVISION], "
    "lerobot:REPO_ID_OR_DIR, module:package.module:factory, or a checkpoint directory "
    "(./path or /path)"
)


class PolicySpecError(ValueError):
    """A ``--benchmark-policy`` value that names no known policy source."""


def _is_path(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~")) or (os.sep in spec and ":" not in spec)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind[:argument]`` and check both; raises PolicySpecError."""
    if _is_path(spec):
        return "local", spec
    kind, _, argument = spec.partition(":")
    if kind not in KINDS or kind == "local":
        raise PolicySpecError(f"unknown policy {spec!r}; valid: {VALID}")
    if kind == "scripted+noise":
        try:
            fraction = float(argument)
        except ValueError:
            fraction = -1.0
        if not 0.0 <= fraction <= 1.0:
            raise PolicySpecError(
                f"policy {spec!r}: scripted+noise needs a fraction of steps in [0, 1], "
                "e.g. scripted+noise:0.5"
            )
    elif kind in ("hub", "lerobot"):
        if not argument.split("@")[0]:
            raise PolicySpecError(
                f"policy {spec!r}: {kind} needs a repository id, e.g. {kind}:org/name"
            )
    elif kind == "module":
        module, _, factory = argument.partition(":")
        if not module or not factory:
            raise PolicySpecError(
                f"policy {spec!r}: module needs package.module:factory, "
                "e.g. module:my_pkg.policies:make"
            )
    elif argument:
        raise PolicySpecError(f"policy {kind!r} takes no argument, got {spec!r}")
    return kind, argument


def expert_based(spec: str) -> bool:
    """Whether a spec acts through the benchmark's scripted expert (which may need the env to
    compute privileged state); False for anything that is not a valid spec."""
    try:
        return parse_spec(spec)[0] in EXPERT_KINDS
    except PolicySpecError:
        return False


def lerobot_missing() -> str | None:
    """Why ``lerobot:`` policies cannot load here, or None."""
    if importlib.util.find_spec("lerobot") is None:
        return "LeRobot is not installed: pip install 'pytest-benchmarks[lerobot]'"
    return None


def is_local_path(argument: str) -> bool:
    """A path as typed (``./x``, ``/x``, ``~/x``), never a Hub id (``org/name``)."""
    return argument.startswith(("/", "./", "../", "~")) or argument.count("/") > 1
