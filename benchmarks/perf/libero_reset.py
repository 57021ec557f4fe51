"""LIBERO episodes as robosuite runs them, and with the harness's two changes that keep every
state: the compiled scene and its render context reused by the reset
(``pytest_benchmarks.envs.libero.reset``), then also the lean control substeps
(``pytest_benchmarks.envs.libero.substeps``), side by side.

The three envs take turns episode by episode, the scripted expert acting, the same seeds and
initial states; prints the median reset time (reset, initial state and settle steps), the
median whole-episode time and the median time per step after the reset of each, and checks
that all took the same steps.

    python benchmarks/perf/libero_reset.py [--task libero_spatial/0] [--episodes 5]
        [--obs state|pixels] [--max-steps 280]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from pytest_benchmarks.core import catalog, rendering
from pytest_benchmarks.core.expert_action import EXPERT_KEY
from pytest_benchmarks.core.tasks import EnvConfig


def make(task: str, reuse: bool, lean: bool, obs: str) -> Any:
    bench = catalog.get("libero")
    env = bench.make_env(EnvConfig(bench.select([task])[0], 300, 1000, privileged=True,
                                   obs=obs, image_size=(128, 128)))  # fmt: skip
    if not reuse:  # robosuite's own: compile, and make a render context, on every reset
        del env._env.env._initialize_sim
        del env._env.env._destroy_sim
    if not lean:  # robosuite's own substeps: three forward passes each
        del env._env.env._pre_action
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
    envs = {"robosuite's own": make(args.task, False, False, args.obs),
            "scene reused": make(args.task, True, False, args.obs),
            "+ lean steps": make(args.task, True, True, args.obs)}  # fmt: skip
    figures: dict[str, list[tuple[float, float, int]]] = {name: [] for name in envs}
    for index in range(args.episodes):
        for name, env in envs.items():
            figures[name].append(episode(env, index, args.max_steps))
    steps = {name: [f[2] for f in rows] for name, rows in figures.items()}
    print(f"{args.task}, obs {args.obs}, scripted expert, {args.episodes} episodes each, medians")
    for name, rows in figures.items():
        reset_s = statistics.median(f[0] for f in rows)
        episode_s = statistics.median(f[1] for f in rows)
        step_ms = statistics.median(1000 * (f[1] - f[0]) / max(1, f[2]) for f in rows)
        print(f"  {name:15} reset {reset_s:6.3f} s  episode {episode_s:6.3f} s  "
              f"step {step_ms:6.1f} ms  steps {steps[name]}")  # fmt: skip
    own, reused, lean = (statistics.median(f[1] for f in rows) for rows in figures.values())
    same = all(s == steps["robosuite's own"] for s in steps.values())
    print(f"  episode time against robosuite's own: scene reused {reused / own:.2f}, "
          f"+ lean steps {lean / own:.2f}; same steps: {same}")  # fmt: skip
    for env in envs.values():
        env.close()


if __name__ == "__main__":
    main()
