"""The Hugging Face Hub as a policy source, and the device policies run on: what the sources,
a checkpoint's backbone and its declared image size all build on (this module imports no other
policy module)."""

from __future__ import annotations

from pathlib import Path


class PolicySourceError(ValueError):
    """A policy that cannot be found or built; the message is one line."""


def resolve_device(device: str) -> str:
    """``auto``: cuda when torch sees a GPU, else cpu."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def worker_device(device: str, worker: str | None) -> str:
    """The device a process's policies use. Under xdist, ``cuda`` (or ``auto`` on a GPU
    machine) puts worker gwN on GPU N mod the GPU count, so N workers share the GPUs evenly;
    a process outside xdist, or a machine with one GPU, gets ``cuda``."""
    resolved = resolve_device(device)
    number = worker.removeprefix("gw") if worker else ""
    if resolved != "cuda" or not number.isdigit():
        return resolved
    import torch

    count = torch.cuda.device_count()
    return f"cuda:{int(number) % count}" if count > 1 else "cuda"


def hub_snapshot(
    argument: str, label: str | None = None, allow_patterns: list[str] | None = None
) -> tuple[Path, str, str]:
    """Download (or find in the local cache) ``REPO_ID[@REVISION]``: (folder, repo id, commit).

    Goes through huggingface_hub, so its cache (HF_HOME, HF_HUB_CACHE), HF_HUB_OFFLINE and
    revisions behave as anywhere else. ``allow_patterns``: only the files that match. Offline,
    the cache alone is asked (huggingface_hub 1.x would otherwise list a commit's files on the
    Hub even with HF_HUB_OFFLINE=1).
    """
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
    )

    repo_id, _, revision = argument.partition("@")
    offline = constants.is_offline_mode()
    try:
        folder = Path(
            snapshot_download(
                repo_id,
                revision=revision or None,
                allow_patterns=allow_patterns,
                local_files_only=offline,
            )
        )
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        raise PolicySourceError(
            f"{label or 'hub:' + argument}: not in the local Hub cache, and the Hub cannot be "
            "reached (offline, or HF_HUB_OFFLINE=1); download it once online or point "
            "HF_HUB_CACHE at a cache that has it"
        ) from None
    except HfHubHTTPError as exc:
        raise PolicySourceError(
            f"{label or 'hub:' + argument}: {str(exc).splitlines()[0]}"
        ) from None
    return folder, repo_id, folder.name
