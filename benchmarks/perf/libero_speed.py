"""LIBERO on this machine: env build time and steps per second, state-only and rendered.

Builds one env per observation mode (timed in this process), then runs two libero_spatial tasks
with a random policy through the plugin with ``-n 0`` and ``-n 2`` and reports the per-env
stepping rate (steps over episode time, builds and settle steps excluded) and the session's
throughput (steps over the whole pytest process's wall time).

    python benchmarks/perf/libero_speed.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def import_time() -> float:
    """Preparing and importing LIBERO (robosuite, torch) once per process."""
    from pytest_benchmarks.core import rendering
    from pytest_benchmarks.envs.libero.setup import prepare

    rendering.choose_backend()
    started = time.perf_counter()
    prepare()
    import libero.libero.benchmark
    import libero.libero.envs  # noqa: F401

    return time.perf_counter() - started


def build_time(obs: str, rounds: int = 3) -> float:
    """Median time to build one env after LIBERO is imported."""
    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.tasks import EnvConfig
    from pytest_benchmarks.envs.libero.env import LiberoTaskEnv

    task = catalog.get("libero").select(["libero_spatial/0"])[0]
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        env = LiberoTaskEnv(EnvConfig(task, 10, 0, obs=obs))
        times.append(time.perf_counter() - started)
        env.close()
    return statistics.median(times)


def session(obs: str, workers: int, steps: int, metrics: Path) -> dict[str, float]:
    command = [
        sys.executable, "-m", "pytest", "benchmarks/test_libero.py", "-q", "-p", "no:cacheprovider",
        "-k", "test_rollout", "--benchmark-task=libero_spatial/0,libero_spatial/1",
        "--benchmark-policy=random", "--benchmark-episodes=2", f"--benchmark-obs={obs}",
        f"--benchmark-max-steps={steps}", f"--benchmark-metrics={metrics}", "-n", str(workers),
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(done.stdout[-3000:])
    episodes = [e for row in json.loads(metrics.read_text())["results"] for e in row["episodes"]]
    total = sum(e["steps"] for e in episodes)
    return {
        "steps": total,
        "per_env": total / sum(e["duration_s"] for e in episodes),
        "session": total / wall,
        "wall": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-steps", type=int, default=60)
    parser.add_argument("--pixel-steps", type=int, default=15)
    args = parser.parse_args()
    print(f"import LIBERO: {import_time():.1f} s", flush=True)
    for obs in ("state", "pixels"):
        print(f"env build, {obs}: {build_time(obs):.1f} s (median of 3)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for obs, steps in (("state", args.state_steps), ("pixels", args.pixel_steps)):
            for workers in (0, 2):
                r = session(obs, workers, steps, Path(tmp) / "m.json")
                print(
                    f"{obs:<6} -n {workers}: {r['steps']:.0f} steps, {r['per_env']:.1f} steps/s "
                    f"per env, {r['session']:.1f} steps/s over the session ({r['wall']:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
