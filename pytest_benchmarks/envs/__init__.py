"""The built-in benchmarks, one package each (``mujoco`` holds the rendering both share).

Each is found through the ``pytest_benchmarks.benchmarks`` entry point, exactly as a benchmark
from another package is; nothing outside this folder names them.
"""
