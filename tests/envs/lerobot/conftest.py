"""Imported once for the whole directory, so that the in-process sessions of its tests do not
unload it (pytester restores ``sys.modules`` after each): gymnasium cloudpickles each slot's env
maker to its worker, and a class whose module is not in ``sys.modules`` is pickled by value."""

import importlib
import importlib.util

if importlib.util.find_spec("lerobot") is not None:
    importlib.import_module("pytest_benchmarks.envs.lerobot.benchmark")
