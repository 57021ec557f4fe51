"""The pretrained backbone a LeRobot checkpoint names (SmolVLA's ``vlm_model_name``).

SmolVLA builds its vision-language model from the backbone's config and processor, and its
pre-processor's tokenizer step loads the backbone's tokenizer, both by that name. The name is
resolved once, like the checkpoint itself: a local directory as it is, a Hub id through
huggingface_hub's cache (HF_HUB_OFFLINE and HF_HUB_CACHE as anywhere else), and both the model
and the tokenizer step are pointed at the resolved folder, so nothing looks the name up again.
What was resolved (path and file hash, or repo and commit) joins the policy's identity: a
checkpoint evaluated with another backbone is another experiment.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.files import file_hash
from pytest_benchmarks.core.policy_spec import names_directory
from pytest_benchmarks.policies.hub import PolicySourceError, hub_snapshot

#: The config field naming the backbone, per policy type.
FIELDS = {"smolvla": "vlm_model_name"}
#: The pre-processor step that loads the backbone's tokenizer (LeRobot's registry name).
TOKENIZER_STEP = "tokenizer_processor"
#: Without its weights (``load_vlm_weights`` false: the checkpoint holds them) a backbone is
#: its config, processor and tokenizer files.
NO_WEIGHTS = ["*.json", "*.txt", "*.jinja", "*.model"]


class BackboneError(ValueError):
    """A backbone that cannot be found; one line."""


@dataclass(frozen=True)
class Backbone:
    folder: Path
    #: ``REPO@COMMIT`` or ``PATH#HASH``: what the policy's identity records.
    label: str


def folder_hash(folder: Path) -> str:
    """The first 12 hex digits of a SHA-256 over every file's relative path and hash."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder)}\0{file_hash(path)}\0".encode())
    return digest.hexdigest()[:12]


def resolve(policy_config: Any, name: str) -> Backbone | None:
    """The backbone ``policy_config`` names, resolved; the config then names the folder.
    None for a policy type without one. BackboneError when it cannot be found."""
    field = FIELDS.get(getattr(policy_config, "type", ""))
    value = getattr(policy_config, field, None) if field else None
    if not field or not value:
        return None
    path = Path(value).expanduser()
    if path.is_dir():
        folder = path.resolve()
        label = f"{folder}#{folder_hash(folder)}"
    elif names_directory(value):
        raise BackboneError(f"{name}: its backbone ({field}) {value} is no directory")
    else:
        weights = getattr(policy_config, "load_vlm_weights", True)
        try:
            folder, repo_id, commit = hub_snapshot(
                value, f"{name}: its backbone ({field}) {value}", None if weights else NO_WEIGHTS
            )
        except PolicySourceError as exc:
            raise BackboneError(str(exc)) from None
        label = f"{repo_id}@{commit}"
    setattr(policy_config, field, str(folder))
    return Backbone(folder, label)


def tokenizer_override(checkpoint: Path, backbone: Backbone | None) -> dict[str, dict[str, Any]]:
    """The pre-processor override that points its tokenizer step at the resolved backbone
    (only when the saved pre-processor has that step: LeRobot refuses overrides of no step)."""
    if backbone is None:
        return {}
    saved = checkpoint / "policy_preprocessor.json"
    try:
        steps = json.loads(saved.read_text(encoding="utf-8")).get("steps", [])
    except (OSError, ValueError):
        return {}  # LeRobot's own loading names the problem
    if any(step.get("registry_name") == TOKENIZER_STEP for step in steps):
        return {TOKENIZER_STEP: {"tokenizer_name": str(backbone.folder)}}
    return {}
