"""The ``run`` block of the metrics JSON: arguments, settings, machine, versions, timing."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.settings import Settings

#: The harness's own packages; each benchmark adds its simulator's (``Benchmark.packages``).
PACKAGES = ("pytest-benchmarks", "pytest", "pytest-xdist", "gymnasium", "numpy", "torch")
#: What a policy's outcome may hang on beside its simulator's packages (the fingerprint's).
LEARNING = ("gymnasium", "numpy", "torch", "lerobot")
#: Set in the project's images (docker/): the image a run ran in.
IMAGE_VARIABLE = "PYTEST_BENCHMARKS_IMAGE"


def fingerprint(simulators: tuple[str, ...], renders: bool) -> dict[str, Any]:
    """The environment an outcome may hang on beside its settings: the simulator's packages
    and the learning libraries (versions, None where absent), the renderer (MuJoCo's GL backend,
    where images are rendered), the GPU (where torch sees one), the container image. A MuJoCo
    that changes under a snapshot is said beside the verdict (``gate.environment_changes``)."""
    found: dict[str, Any] = {"packages": dict(_versions((*simulators, *LEARNING)))}
    if renders:
        found["renderer"] = os.environ.get("MUJOCO_GL", "default")
    found["gpu"] = _gpu()
    image = os.environ.get(IMAGE_VARIABLE) or ("docker" if Path("/.dockerenv").exists() else None)
    found["container"] = image
    clipped: dict[str, Any] = _clipped(found)
    return clipped


#: The longest value a fingerprint keeps (a snapshot refuses longer ones).
MAX_VALUE = 200


def _clipped(value: Any) -> Any:
    """The fingerprint with each string clipped to ``MAX_VALUE`` characters: a 1 MB version
    string or image name would make every snapshot it is stored in unreadable."""
    if isinstance(value, dict):
        return {k: _clipped(v) for k, v in value.items()}
    if isinstance(value, str) and len(value) > MAX_VALUE:
        return value[: MAX_VALUE - 1] + "…"
    return value


def benchmark_fingerprint(env: str, renders: bool) -> dict[str, Any]:
    """``fingerprint`` for a task of benchmark ``env``: its simulator's packages."""
    return fingerprint(tuple(catalog.get(env).packages), renders)


@lru_cache(maxsize=64)
def _versions(names: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    """Installed versions (None where absent), looked up once per process."""
    found: list[tuple[str, str | None]] = []
    for name in dict.fromkeys(names):
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            found.append((name, None))
    return tuple(found)


def _gpu() -> str | None:
    """``NVIDIA H100 80GB HBM3 (CUDA 12.8)`` where a torch already imported sees a GPU."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"


def package_versions() -> dict[str, str | None]:
    """Installed versions of the harness's packages and every loadable benchmark's."""
    names = list(PACKAGES)
    for benchmark in catalog.names():
        try:
            names.extend(catalog.get(benchmark).packages)
        except catalog.BenchmarkLoadError:
            continue  # its entry point is broken; the run says so where it is asked for
    versions: dict[str, str | None] = {}
    for name in dict.fromkeys(names):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(directory: Path) -> str | None:
    """The checked-out commit of the project under test, when it is a git work tree."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat(timespec="seconds")


def run_fingerprint(settings: Settings) -> dict[str, Any]:
    """``fingerprint`` of a run of ``settings``: its benchmarks' packages, the renderer where
    it renders."""
    return fingerprint(_simulators(settings), settings.obs not in (None, "state"))


def static_info(args: list[str], root: Path, settings: Settings) -> dict[str, Any]:
    """What cannot change during a run: arguments, commit, machine, versions, the environment's
    fingerprint (read once, not at every write)."""
    return {
        "args": args,
        "git_commit": git_commit(root),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "packages": package_versions(),
        "fingerprint": run_fingerprint(settings),
    }


def run_block(
    static: dict[str, Any],
    settings: Settings,
    workers: int,
    started_at: float,
    partial: bool,
    exitstatus: int | None,
) -> dict[str, Any]:
    now = time.time()
    return {
        **static,
        **settings.as_dict(),
        "workers": workers,
        "started_at": _iso(started_at),
        "finished_at": _iso(now),
        "duration_s": now - started_at,
        "partial": partial,
        "exitstatus": exitstatus,
    }


def _simulators(settings: Settings) -> tuple[str, ...]:
    """The packages of the run's benchmarks (every loadable one where it names none)."""
    names: list[str] = []
    for benchmark in settings.envs or catalog.names():
        try:
            names.extend(catalog.get(benchmark).packages)
        except (catalog.BenchmarkLoadError, KeyError, ValueError):
            continue
    return tuple(dict.fromkeys(names))
