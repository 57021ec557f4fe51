"""LIBERO's suites, task names, descriptions and episode lengths, read without importing LIBERO.

The task lists come from the installed hf-libero package's ``libero_suite_task_map.py``, a plain
data module, loaded by path so that listing and validating tasks never runs LIBERO's package
init (which prompts, and imports torch and robosuite).
"""

from __future__ import annotations

import importlib.util
from functools import cache

from pytest_benchmarks.envs.libero.setup import libero_dir

SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
DEFAULT_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
MAX_STEPS = {
    "libero_spatial": 280,
    "libero_object": 280,
    "libero_goal": 300,
    "libero_10": 520,
    "libero_90": 400,
}


@cache
def task_names() -> dict[str, list[str]]:
    """Suite -> task names in the suite's own order (task_id = position)."""
    path = libero_dir() / "benchmark" / "libero_suite_task_map.py"
    spec = importlib.util.spec_from_file_location("_libero_suite_task_map", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {suite: list(module.libero_task_map[suite]) for suite in SUITES}


def description(name: str) -> str:
    """The language instruction LIBERO derives from a task name.

    LIBERO-100 names carry a scene prefix (``KITCHEN_SCENE3_turn_on_the_stove``) that is not
    part of the instruction.
    """
    if name[0].isupper():
        marker = name.find("SCENE")
        name = name[name.find("_", marker) + 1 :]
    return name.replace("_", " ")
