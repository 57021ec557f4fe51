"""Choosing MuJoCo's OpenGL backend before mujoco is imported.

MuJoCo reads ``MUJOCO_GL`` once, at import. A user's own setting always wins; otherwise EGL where
a GPU device and libEGL exist, OSMesa (CPU rendering) elsewhere. Worker processes inherit the
choice through the environment.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
from collections.abc import MutableMapping

#: Libraries each backend loads, and what to install when one is missing.
LIBRARIES = {
    "egl": ("EGL", "a GPU driver with libEGL (e.g. apt-get install libegl1)"),
    "osmesa": ("OSMesa", "apt-get install libosmesa6"),
    "glfw": ("glfw", "apt-get install libglfw3 and a display"),
}


def gpu_present() -> bool:
    return bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/dri/renderD*"))


def choose_backend(environ: MutableMapping[str, str] | None = None) -> str:
    """Set MUJOCO_GL and PYOPENGL_PLATFORM unless already set; return the backend in force."""
    env = os.environ if environ is None else environ
    if "MUJOCO_GL" not in env:
        egl = gpu_present() and ctypes.util.find_library("EGL") is not None
        env["MUJOCO_GL"] = "egl" if egl else "osmesa"
    backend = env["MUJOCO_GL"]
    if backend in ("egl", "osmesa"):
        env.setdefault("PYOPENGL_PLATFORM", backend)
    return backend


def missing(backend: str) -> str | None:
    """One line saying what to install when the backend's library is absent, else None."""
    library, remedy = LIBRARIES.get(backend, (None, ""))
    if library is None or ctypes.util.find_library(library) is not None:
        return None
    return (
        f"MuJoCo rendering backend MUJOCO_GL={backend} needs lib{library}, which is missing: "
        f"{remedy}, or use --benchmark-obs=state"
    )
