"""LIBERO episodes with robosuite's hard reset (compiling the scene, and with pixels making a
render context, every time) and with the compiled scene and its render context reused
(``pytest_benchmarks.envs.libero_reset``), side by side.

The two envs take turns episode by episode, the scripted expert acting, the same seeds and
initial states; prints the median reset time (reset, initial state and settle steps) and the
median whole-episode time of each, and checks that both envs took the same steps.

    python benchmarks/perf/libero_reset.py [--task libero_spatial/0] [--episodes 5]
        [--obs state|pixels] [--max-steps 280]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine import rendering
from pytest_benchmarks.envs.libero import EXPERT_KEY


def make(task: str, reuse: bool, obs: str) -> Any:
    bench = catalog.get("libero")
    env = bench.make_env(EnvConfig(bench.select([task])[0], 300, 1000, privileged=True,
                                   obs=obs, image_size=(128, 128)))  # fmt: skip
    if not reuse:  # robosuite's own: compile, and make a render context, on every reset
        del env._env.env._initialize_sim
        del env._env.env._destroy_sim
    return env


def episode(env: Any, index: int, max_steps: int) -> tuple[float, float, int]:
    """Seconds of the reset, seconds of the whole episode, steps taken."""
    began = time.perf_counter()
    obs, _ = env.reset(seed=1000 + index, options={"init_state": index})
    reset_s = time.perf_counter() - began
    steps = 0
    while steps < max_steps:
        obs, _, _, _, info = env.step(obs[EXPERT_KEY])
        steps += 1
        if info["success"]:
            break
    return reset_s, time.perf_counter() - began, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="libero_spatial/0")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=280)
    parser.add_argument("--obs", choices=("state", "pixels"), default="state",
                        help="pixels: two 128x128 cameras, rendered on every step")  # fmt: skip
    args = parser.parse_args()
    if args.obs == "pixels":
        rendering.choose_backend()
    envs = {"hard reset": make(args.task, False, args.obs),
            "scene reused": make(args.task, True, args.obs)}  # fmt: skip
    figures: dict[str, list[tuple[float, float, int]]] = {name: [] for name in envs}
    for index in range(args.episodes):
        for name, env in envs.items():
            figures[name].append(episode(env, index, args.max_steps))
    steps = {name: [f[2] for f in rows] for name, rows in figures.items()}
    print(f"{args.task}, obs {args.obs}, scripted expert, {args.episodes} episodes each, medians")
    for name, rows in figures.items():
        reset_s = statistics.median(f[0] for f in rows)
        episode_s = statistics.median(f[1] for f in rows)
        print(f"  {name:13} reset {reset_s:6.3f} s  episode {episode_s:6.3f} s  "
              f"steps {steps[name]}")  # fmt: skip
    hard, reused = (statistics.median(f[1] for f in rows) for rows in figures.values())
    print(f"  episode time, reused / hard: {reused / hard:.2f}; same steps: "
          f"{np.array_equal(*steps.values())}")  # fmt: skip
    for env in envs.values():
        env.close()


if __name__ == "__main__":
    main()
