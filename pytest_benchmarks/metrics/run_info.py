"""The ``run`` block of the metrics JSON: arguments, settings, machine, versions, timing."""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.settings import Settings

#: The harness's own packages; each benchmark adds its simulator's (``Benchmark.packages``).
PACKAGES = ("pytest-benchmarks", "pytest", "pytest-xdist", "gymnasium", "numpy", "torch")


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


def static_info(args: list[str], root: Path) -> dict[str, Any]:
    """What cannot change during a run: arguments, commit, machine, versions."""
    return {
        "args": args,
        "git_commit": git_commit(root),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "packages": package_versions(),
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
