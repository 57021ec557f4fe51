"""Env steps per second of ALOHA and PushT: the harness's env in each observation mode (and
with the scripted expert computed in the env), against the simulator's own env as LeRobot
builds it. One process, seeded actions (ALOHA: small moves about
the start pose; PushT: targets in the board's middle); medians of ``--rounds``
rounds of ``--steps`` steps, the variants taking turns round by round.

    python benchmarks/perf/sim_speed.py [--steps 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")

import numpy as np

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.tasks import EnvConfig

SEED = 1000
#: (benchmark, task, variant, observation mode, image size, expert in the env)
VARIANTS = [
    ("aloha", "AlohaTransferCube-v0", "state", "state", (128, 128), False),
    ("aloha", "AlohaTransferCube-v0", "state+expert", "state", (128, 128), True),
    ("aloha", "AlohaTransferCube-v0", "pixels 128", "pixels", (128, 128), False),
    ("aloha", "AlohaTransferCube-v0", "lerobot 480x640", "lerobot", (480, 640), False),
    ("aloha", "AlohaTransferCube-v0", "gym-aloha (3 cameras)", "own", (480, 640), False),
    ("pusht", "PushT-v0", "state", "state", (96, 96), False),
    ("pusht", "PushT-v0", "state+expert", "state", (96, 96), True),
    ("pusht", "PushT-v0", "lerobot 96", "lerobot", (96, 96), False),
    ("pusht", "PushT-v0", "gym-pusht pixels 96", "own", (96, 96), False),
]


def make(name: str, task: str, obs: str, size: tuple[int, int], expert: bool) -> Any:
    if obs == "own":
        if name == "aloha":
            from gym_aloha.env import AlohaEnv

            return AlohaEnv("transfer_cube", obs_type="pixels_agent_pos")
        from gym_pusht.envs.pusht import PushTEnv

        return PushTEnv(obs_type="pixels_agent_pos")
    benchmark = catalog.get(name)
    config = EnvConfig(benchmark.select([task])[0], 400, SEED, obs=obs, image_size=size,
                       privileged=expert)  # fmt: skip
    return benchmark.make_env(benchmark.describe(config))


def stepper(name: str, env: Any, steps: int) -> Callable[[], float]:
    """Seconds for ``steps`` steps after a reset."""
    rng = np.random.default_rng(0)

    def run() -> float:
        obs, _ = env.reset(seed=SEED)
        if name == "aloha":
            start = np.asarray(obs["qpos"] if "qpos" in obs else obs["agent_pos"], np.float32)
            actions = [
                start + rng.uniform(-0.02, 0.02, 14).astype(np.float32) for _ in range(steps)
            ]
        else:
            actions = [rng.uniform(150, 350, 2).astype(np.float32) for _ in range(steps)]
        began = time.perf_counter()
        for action in actions:
            env.step(action)
        return time.perf_counter() - began

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs = {v[:3]: stepper(v[0], make(v[0], v[1], v[3], v[4], v[5]), args.steps) for v in VARIANTS}
    times: dict[tuple[str, str, str], list[float]] = {key: [] for key in runs}
    for _ in range(args.rounds):
        for key, run in runs.items():
            times[key].append(run())
    print(f"{'benchmark':10} {'variant':24} steps/s (median of {args.rounds} x {args.steps})")
    for (name, _, variant), seconds in times.items():
        print(f"{name:10} {variant:24} {args.steps / statistics.median(seconds):8.1f}")


if __name__ == "__main__":
    main()
