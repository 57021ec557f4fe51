"""Choosing MuJoCo's GL backend, and the one-line error when rendering cannot work."""

from __future__ import annotations

import ctypes.util

import pytest

from pytest_benchmarks.core import rendering


def test_a_users_backend_is_kept():
    environ = {"MUJOCO_GL": "egl"}
    assert rendering.choose_backend(environ) == "egl"
    assert environ == {"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"}
    environ = {"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}
    assert rendering.choose_backend(environ) == "osmesa"


def test_osmesa_without_a_gpu(monkeypatch):
    monkeypatch.setattr(rendering, "gpu_present", lambda: False)
    environ: dict[str, str] = {}
    assert rendering.choose_backend(environ) == "osmesa"
    assert environ == {"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}


def test_egl_with_a_gpu_and_libegl(monkeypatch):
    monkeypatch.setattr(rendering, "gpu_present", lambda: True)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: f"lib{name}.so.1")
    environ: dict[str, str] = {}
    assert rendering.choose_backend(environ) == "egl"


def test_missing_library_names_the_package(monkeypatch):
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert rendering.missing("osmesa") == (
        "MuJoCo rendering backend MUJOCO_GL=osmesa needs libOSMesa, which is missing: "
        "apt-get install libosmesa6, or use --benchmark-obs=state"
    )
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libOSMesa.so.8")
    assert rendering.missing("osmesa") is None


def test_pixels_without_a_working_backend_stop_the_session(pytester, monkeypatch):
    if ctypes.util.find_library("glfw") is not None:
        pytest.skip("libglfw is installed here")
    monkeypatch.setenv("MUJOCO_GL", "glfw")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest_subprocess("--benchmark-env=metaworld", "--benchmark-obs=pixels")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: MuJoCo rendering backend MUJOCO_GL=glfw needs libglfw*"])
    # State observations need no rendering, so the same backend is fine for them.
    result = pytester.runpytest_subprocess("--benchmark-env=metaworld", "--benchmark-obs=state")
    assert result.ret == 0
