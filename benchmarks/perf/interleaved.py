"""The harness's rollouts against the plain loop's, episode by episode in one process.

A whole-process comparison (``throughput.py``) on a shared machine moves by 20-30% from one
process to the next, more than the difference it looks for. Here each episode runs twice, once
through the harness's own path (``SlotVectorEnv``, processors, checks, ``run_episodes``) and
once through ``plain_loop.run_episode`` on a plain Meta-World env, alternating which goes first,
so both see the same moment of the machine. Each side is timed from its reset to its last step;
the per-task set-up (building the envs, the plan, one untimed episode each) is left out. Prints
the summed times and steps per task, the harness's steps/s over the plain loop's per round, and
the median over rounds.

    python benchmarks/perf/interleaved.py --task MT10 --episodes 50 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import metaworld
from metaworld.policies import ENV_POLICY_MAP

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.engine.rollout import run_episodes
from pytest_benchmarks.engine.vector import make_vector_env

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_loop import run_episode


def task_times(
    task: TaskRef, episodes: int, seed: int, max_steps: int
) -> tuple[float, float, int, int]:
    """Summed seconds of the harness's and the plain loop's episodes of one task, and the steps
    each took (the harness's expert sees float32 states, so a step may differ)."""
    benchmark = catalog.get("metaworld")
    config = EnvConfig(task, max_steps, seed)
    harness_env = make_vector_env(benchmark, config, 1)
    policy = benchmark.scripted_policy(task, 1)
    processors = benchmark.processors(config)
    plan = plan_episodes(benchmark, task, seed, range(episodes))
    goals = metaworld.MT1(task.task, seed=seed).train_tasks
    plain_env = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task.task]()
    plain_env.max_path_length = max_steps
    expert = ENV_POLICY_MAP[task.task]()
    harness_s = plain_s = 0.0
    steps = plain_steps = 0

    def harness() -> float:
        nonlocal steps
        started = time.perf_counter()
        run_episodes(harness_env, policy, processors, [spec], lambda r: records.append(r))
        elapsed = time.perf_counter() - started
        steps += records[-1].steps
        return elapsed

    def plain() -> float:
        nonlocal plain_steps
        started = time.perf_counter()
        plain_steps += run_episode(plain_env, expert, goals[spec.init_state], max_steps)
        return time.perf_counter() - started

    records: list = []
    spec = plan[0]
    harness(), plain()  # untimed: the slot builds its env on its first reset
    # MT1's goals drawn up front on both sides (the harness draws them as episodes first ask).
    harness_env.envs[0]._env._goals[len(plan) - 1]
    steps = plain_steps = 0
    for spec in plan:
        if spec.index % 2:
            plain_s += plain()
            harness_s += harness()
        else:
            harness_s += harness()
            plain_s += plain()
    harness_env.close()
    plain_env.close()
    return harness_s, plain_s, steps, plain_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="MT10", help="task or group, as --benchmark-task")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=500)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # rounds are long
    tasks = catalog.get("metaworld").select(args.task.split(","))
    ratios = []
    for round_ in range(args.rounds):
        totals = [0.0, 0.0, 0, 0]  # harness s, plain s, harness steps, plain steps
        for task in tasks:
            times = task_times(task, args.episodes, args.seed, args.max_steps)
            totals = [a + b for a, b in zip(totals, times, strict=True)]
            harness_s, plain_s, steps, plain_steps = times
            ratio = (steps / harness_s) / (plain_steps / plain_s)
            print(f"  {task.task:<26} steps {steps:>6} / {plain_steps:>6}  harness "
                  f"{harness_s:6.2f} s  plain {plain_s:6.2f} s  ratio {ratio:.3f}")  # fmt: skip
        ratios.append((totals[2] / totals[0]) / (totals[3] / totals[1]))
        print(f"round {round_ + 1}/{args.rounds}: harness {totals[0]:.2f} s, plain "
              f"{totals[1]:.2f} s, harness / plain {ratios[-1]:.3f}")  # fmt: skip
    print(f"\n{args.task}, {args.episodes} episodes per task, {args.rounds} rounds: harness / "
          f"plain loop (steps/s) median {statistics.median(ratios):.3f} "
          f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)}; target >= 0.95)")  # fmt: skip


if __name__ == "__main__":
    main()
