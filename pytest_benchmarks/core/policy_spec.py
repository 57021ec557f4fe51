"""``--benchmark-policy`` specs, parsed once into a ``PolicySpec`` without importing any policy
library: every layer asks the spec (its kind, whether it is the expert, whether it names a
directory here) instead of reading the string again."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

KINDS = ("scripted", "scripted+noise", "random", "noop", "hub", "lerobot", "module", "local")

#: Specs built on the benchmark's scripted expert.
EXPERT_KINDS = ("scripted", "scripted+noise")

#: The kind of a policy the API was handed as an object or a factory: no spec names it.
OBJECT = "object"

VALID = (
    "scripted, scripted+noise:FRACTION, random, noop, hub:REPO_ID[@REVISION], "
    "lerobot:REPO_ID_OR_DIR, module:package.module:factory, or a checkpoint directory "
    "(./path or /path)"
)


class PolicySpecError(ValueError):
    """A ``--benchmark-policy`` value that names no known policy source."""


@dataclass(frozen=True)
class Loading:
    """How a learned policy is placed and fed: its device, the renames its pre-processor applies
    (``lerobot-eval --rename_map``) and whether slots at one phase share a forward pass. The env
    never reads them, so they travel beside ``EnvConfig``, not in it."""

    device: str = "cpu"
    rename_map: tuple[tuple[str, str], ...] = ()
    batched_inference: bool = False
    #: The policy server this process's lerobot: policies act through (an endpoint's text,
    #: ``policies.endpoint``), or None: the policy is loaded here.
    server: str | None = None


def _typed_path(text: str) -> bool:
    """A path as a user types one (``./x``, ``../x``, ``/x``, ``~/x``)."""
    return text.startswith(("/", "./", "../", "~"))


def names_directory(text: str) -> bool:
    """Where a Hub id may stand too (``lerobot:ARG``, a backbone's name): a typed path, or one
    of more than two parts; never ``org/name``, which is a Hub id."""
    return _typed_path(text) or text.count("/") > 1


@dataclass(frozen=True)
class PolicySpec:
    """A parsed policy spec: ``kind[:argument]`` and the text it came from."""

    kind: str
    argument: str = ""
    text: str = ""

    def __str__(self) -> str:
        return self.text or self.kind

    @classmethod
    def parse(cls, text: str) -> PolicySpec:
        """Split ``kind[:argument]`` and check both; raises PolicySpecError. A bare path (one
        that starts like a path, or holds a slash and no colon) is a checkpoint directory."""
        if _typed_path(text) or ("/" in text and ":" not in text):
            return cls("local", text, text)
        kind, _, argument = text.partition(":")
        if kind not in KINDS or kind == "local":
            raise PolicySpecError(f"unknown policy {text!r}; valid: {VALID}")
        _check_argument(text, kind, argument)
        return cls(kind, argument, text)

    @classmethod
    def object(cls) -> PolicySpec:
        """The spec of a policy object or factory handed to the API."""
        return cls(OBJECT, "", OBJECT)

    @property
    def expert_based(self) -> bool:
        """The policy acts through the benchmark's scripted expert (which may need the env to
        compute privileged state)."""
        return self.kind in EXPERT_KINDS

    @property
    def is_lerobot(self) -> bool:
        return self.kind == "lerobot"

    @property
    def local(self) -> bool:
        """The argument names a directory on this machine: always for a checkpoint directory;
        for ``lerobot:`` a typed path or one of more than two parts, never ``org/name``, which
        is a Hub id."""
        return self.kind == "local" or (self.is_lerobot and names_directory(self.argument))

    @property
    def repo(self) -> tuple[str, str | None]:
        """A Hub argument's repository id and revision (None: the default branch)."""
        repo_id, _, revision = self.argument.partition("@")
        return repo_id, revision or None


def _check_argument(text: str, kind: str, argument: str) -> None:
    if kind == "scripted+noise":
        try:
            fraction = float(argument)
        except ValueError:
            fraction = -1.0
        if not 0.0 <= fraction <= 1.0:
            raise PolicySpecError(
                f"policy {text!r}: scripted+noise needs a fraction of steps in [0, 1], "
                "e.g. scripted+noise:0.5"
            )
    elif kind in ("hub", "lerobot"):
        if not argument.split("@")[0]:
            raise PolicySpecError(
                f"policy {text!r}: {kind} needs a repository id, e.g. {kind}:org/name"
            )
    elif kind == "module":
        module, _, factory = argument.partition(":")
        if not module or not factory:
            raise PolicySpecError(
                f"policy {text!r}: module needs package.module:factory, "
                "e.g. module:my_pkg.policies:make"
            )
    elif argument:
        raise PolicySpecError(f"policy {kind!r} takes no argument, got {text!r}")


def lerobot_missing() -> str | None:
    """Why ``lerobot:`` policies cannot load here, or None."""
    if importlib.util.find_spec("lerobot") is None:
        return "LeRobot is not installed: pip install 'pytest-benchmarks[lerobot]'"
    return None


def checkpoint_file(argument: str) -> str | None:
    """Why ``argument`` cannot be a checkpoint when it names a file here (a checkpoint's
    ``model.safetensors`` or ``config.json``, copied from a listing of its folder): the folder
    to give instead; else None."""
    path = Path(os.path.expanduser(argument))
    if not path.is_file():
        return None
    folder = path.absolute().parent
    here = f" ({folder})" if (folder / "config.json").is_file() else ""
    return f"{argument} is a file; give the folder that holds config.json{here}"
