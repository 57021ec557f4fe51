"""The baseline the harness is measured against: Meta-World's scripted experts in a plain loop.

Runs the same episodes the harness plans (episode i of a task uses goal variation i mod 50 of
``metaworld.MT1(task, seed=SEED)``, stops at success or the step limit) with no vector env, no
processors and no checks, and prints the total number of env steps. ``--pixels N`` renders the
corner2 camera at NxN after every reset and step, as the simulator renders it by default.
"""

from __future__ import annotations

import argparse
from typing import Any

import metaworld
import numpy as np
from metaworld.policies import ENV_POLICY_MAP

from pytest_benchmarks.core import catalog, rendering


def run_episode(env: Any, expert: Any, goal: Any, max_steps: int, render: bool = False) -> int:
    """One episode of goal ``goal``, to success or ``max_steps``; its number of steps."""
    env.set_task(goal)
    obs, _ = env.reset()
    if render:
        env.render()
    for step in range(1, max_steps + 1):
        action = np.clip(expert.get_action(obs), -1.0, 1.0)
        obs, _, _, truncated, info = env.step(action)
        if render:
            env.render()
        if info["success"] or truncated:
            return step
    return max_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", default="MT10", help="task or group, as --benchmark-task")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--max-steps", type=int, default=500)
    parser.add_argument("--pixels", type=int, default=0, help="render corner2 at NxN")
    args = parser.parse_args()
    if args.pixels:  # MUJOCO_GL as the harness picks it (osmesa without a GPU)
        rendering.choose_backend()
    render = {"render_mode": "rgb_array", "camera_name": "corner2", "width": args.pixels,
              "height": args.pixels} if args.pixels else {}  # fmt: skip
    total = 0
    for task in catalog.get("metaworld").select(args.task.split(",")):
        goals = metaworld.MT1(task.task, seed=args.seed).train_tasks
        env = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task.task](**render)
        env.max_path_length = args.max_steps
        expert = ENV_POLICY_MAP[task.task]()
        for episode in range(args.episodes):
            goal = goals[episode % len(goals)]
            total += run_episode(env, expert, goal, args.max_steps, bool(render))
        env.close()
    print(f"steps {total}")


if __name__ == "__main__":
    main()
