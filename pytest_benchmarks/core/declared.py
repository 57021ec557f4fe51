"""What a LeRobot checkpoint declares about the images it reads, read before any task runs.

A checkpoint trained at 256x256 wants 256x256 observations; rendering at the harness's default
and then failing the feature check on every task helps nobody. So for ``lerobot:`` policies
the image size its ``config.json`` declares is the default (an explicit
``--benchmark-image-size`` still wins). Only the JSON is read: a local directory's, or the one
in huggingface_hub's cache for a Hub id (never downloaded here; the policy's own loading does
that, and a checkpoint not cached yet keeps the harness's default).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The name SmolVLA and the pi0 family give the cameras they add for ``empty_cameras``.
EMPTY_CAMERA = ".empty_camera_"


@dataclass(frozen=True)
class DeclaredImages:
    """The cameras' common (height, width), and how many cameras the checkpoint reads."""

    size: tuple[int, int]
    cameras: int


def checkpoint_config(argument: str) -> dict[str, Any] | None:
    """The ``config.json`` of ``lerobot:ARGUMENT`` (a directory or ``REPO_ID[@REVISION]``),
    or None when it is not on this machine or not JSON."""
    folder = Path(argument).expanduser()
    if folder.is_dir():
        path = folder / "config.json"
    else:
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return None
        repo_id, _, revision = argument.partition("@")
        try:
            found = try_to_load_from_cache(repo_id, "config.json", revision=revision or None)
        except ValueError:  # not a valid repo id: the policy's loading says so
            return None
        if not isinstance(found, str):
            return None
        path = Path(found)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def declared_images(argument: str) -> DeclaredImages | None:
    """The image size every camera of the checkpoint shares, or None (no cameras, cameras of
    different sizes, no readable config)."""
    features = (checkpoint_config(argument) or {}).get("input_features")
    if not isinstance(features, dict):
        return None
    shapes = [
        tuple(feature["shape"])
        for name, feature in features.items()
        if EMPTY_CAMERA not in name  # SmolVLA's placeholders, which the policy fills itself
        and isinstance(feature, dict)
        and feature.get("type") == "VISUAL"
        and isinstance(feature.get("shape"), list)
        and len(feature["shape"]) == 3
    ]
    sizes = {(int(shape[1]), int(shape[2])) for shape in shapes}
    if len(sizes) != 1:
        return None
    return DeclaredImages(sizes.pop(), len(shapes))
