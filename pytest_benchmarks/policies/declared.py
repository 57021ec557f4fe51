"""What a LeRobot checkpoint declares about the images it reads, read before any task runs.

A checkpoint trained at 256x256 wants 256x256 observations; rendering at the harness's default
and then failing the feature check on every task helps nobody. So for ``lerobot:`` policies
the image size its ``config.json`` declares is the default (an explicit
``--benchmark-image-size`` still wins). Only the JSON is read: a local directory's, or a Hub
checkpoint's through huggingface_hub (its cache, or the Hub when it is reachable; the weights
are the policy's own loading), so a run gets the same size whether or not the checkpoint was
cached before it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.policy_spec import PolicySpec
from pytest_benchmarks.core.settings import DEFAULT_SOURCE, Settings
from pytest_benchmarks.policies.hub import PolicySourceError, hub_snapshot

#: The name SmolVLA and the pi0 family give the cameras they add for ``empty_cameras``.
EMPTY_CAMERA = ".empty_camera_"


@dataclass(frozen=True)
class DeclaredImages:
    """The cameras' common (height, width), and how many cameras the checkpoint reads."""

    size: tuple[int, int]
    cameras: int


def checkpoint_config(spec: PolicySpec) -> dict[str, Any] | None:
    """The ``config.json`` of a ``lerobot:`` spec (a directory or ``REPO_ID[@REVISION]``), or
    None when it is missing, not a JSON object or the id is no valid repository id (the
    policy's loading says why). A Hub checkpoint's comes from the cache when it is there (so
    xdist workers read what the controller fetched), else from the Hub; PolicySourceError when
    it cannot be had (not cached, Hub unreachable)."""
    folder = Path(spec.argument).expanduser()
    if spec.local or folder.is_dir():
        path = folder / "config.json"
    else:
        from huggingface_hub import try_to_load_from_cache

        repo_id, revision = spec.repo
        try:
            cached = try_to_load_from_cache(repo_id, "config.json", revision=revision)
            if isinstance(cached, str):
                path = Path(cached)
            else:
                path = hub_snapshot(spec.argument, str(spec), ["config.json"])[0] / "config.json"
        except PolicySourceError:
            raise
        except ValueError:  # not a valid repository id
            return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def declared_images(spec: PolicySpec) -> DeclaredImages | None:
    """The image size every camera of the checkpoint shares, or None (no cameras, cameras of
    different sizes, no readable config)."""
    features = (checkpoint_config(spec) or {}).get("input_features")
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


def with_declared_images(settings: Settings) -> Settings:
    """``settings`` with a ``lerobot:`` checkpoint's image size where no option gave one.

    A Hub checkpoint whose config cannot be had (offline and not cached) keeps the settings as
    they are: its loading fails in every task, in one line saying so.
    """
    if not settings.policy.is_lerobot or settings.image_size_from != DEFAULT_SOURCE:
        return settings
    try:
        declared = declared_images(settings.policy)
    except PolicySourceError:
        return settings
    if declared is None:
        return settings
    cameras = f"{declared.cameras} camera{'s' * (declared.cameras != 1)}"
    source = f"{settings.policy}'s config.json ({cameras})"
    return replace(settings, image_size=declared.size, image_size_from=source)
