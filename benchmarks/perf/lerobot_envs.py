"""LeRobot's own env types through the harness against the native benchmarks, on the same
episodes: env-steps per second of ``lerobot:pusht`` and ``pusht`` (gym-pusht's keypoints
layout) and of ``lerobot:metaworld`` and ``metaworld`` (LeRobot's layout, push-v3), rounds
interleaved, and whether their per-episode records are equal. The rate is over each task's
rollout (its ``eval_s``), not the session's start (LeRobot's import, the task listing).

    python benchmarks/perf/lerobot_envs.py [--episodes 10] [--steps 100] [--rounds 3]

A policy that holds its action at zero (PushT: at the agent's place) acts alike on both sides,
so every episode runs to the step limit. Prints each run's env-steps/s, the medians and their
ratio per pair.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.api import evaluate

#: (name, native benchmark and its keywords, lerobot:TYPE's keywords).
PAIRS = [
    ("pusht", ("pusht", {"obs": "state"}),
     ("lerobot:pusht", {"env_args": "obs_type=environment_state_agent_pos"})),
    ("metaworld push-v3", ("metaworld", {"obs": "lerobot", "tasks": ["push-v3"]}),
     ("lerobot:metaworld", {"tasks": ["push-v3"]})),
]  # fmt: skip


class Still:
    """Zero actions; PushT's agent is held where it is (its action is a target position)."""

    def __init__(self, config: Any, num_envs: int) -> None:
        self.dim = config.action_space.shape[0]
        self.target = "pusht" in config.task.env

    def reset(self, slots: Any, seeds: Any) -> None:
        pass

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        if self.target:
            return np.asarray(batch["observation.state"], dtype=np.float32)
        return np.zeros((len(batch["task"]), self.dim), np.float32)

    def identity(self) -> dict[str, str | None]:
        return {"source": "module", "id": "still", "revision": None}


def still(config: Any, num_envs: int) -> Still:
    return Still(config, num_envs)


def once(benchmark: str, keywords: dict[str, Any], args: argparse.Namespace) -> tuple[float, list]:
    """One run: env-steps/s over the task's rollout (its ``eval_s``: env building included,
    the session's start not), and the episodes' records."""
    with tempfile.TemporaryDirectory() as folder:
        done = evaluate(benchmark, policy=still, episodes=args.episodes, max_steps=args.steps,
                        batch_size=1, sync=True, metrics=Path(folder) / "m.json",
                        **keywords)  # fmt: skip
    (result,) = done.results
    if result.error:
        raise SystemExit(f"{benchmark}: {result.error}")
    steps = sum(e.steps for e in result.episodes)
    outcome = [(e.seed, e.success, e.steps, e.sum_reward) for e in result.episodes]
    return steps / result.eval_s, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for name, (native, native_kw), (lerobot, lerobot_kw) in PAIRS:
        rates: dict[str, list[float]] = {native: [], lerobot: []}
        records = {}
        for _ in range(args.rounds):
            for benchmark, keywords in ((native, native_kw), (lerobot, lerobot_kw)):
                rate, records[benchmark] = once(benchmark, keywords, args)
                rates[benchmark].append(rate)
                print(f"{name}: {benchmark:<18} {rate:8.1f} env-steps/s", flush=True)
        medians = {b: statistics.median(r) for b, r in rates.items()}
        print(f"{name}: median {native} {medians[native]:.1f}, {lerobot} {medians[lerobot]:.1f} "
              f"env-steps/s; {lerobot} / {native}: {medians[lerobot] / medians[native]:.2f}; "
              f"records equal: {records[native] == records[lerobot]}")  # fmt: skip


if __name__ == "__main__":
    main()
