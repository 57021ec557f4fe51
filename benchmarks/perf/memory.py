"""The parent's memory over a long task: 200 episodes must not grow it (no per-step hoarding).

Runs one Meta-World task with its scripted expert through the harness's own rollout loop
(``run_episodes``, which the fixtures' ``evaluate_task`` drives) and samples the resident set
size of this process, the one that receives every observation, after every 20 episodes. The
vector env's workers are separate processes and are not counted.

    python benchmarks/perf/memory.py [--episodes 200] [--task reach-v3] [--obs state|pixels]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pytest_benchmarks.core import catalog, rendering
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.rollout import run_episodes
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.policies import make_policy


def rss_mib() -> float:
    """Resident set size of this process, in MiB, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--task", default="reach-v3")
    parser.add_argument("--obs", choices=("state", "pixels"), default="state")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--every", type=int, default=20)
    args = parser.parse_args()

    rendering.choose_backend()
    benchmark = catalog.get("metaworld")
    task = benchmark.select([args.task])[0]
    size = (args.image_size, args.image_size)
    config = EnvConfig(task, 500, 1000, obs=args.obs, image_size=size)
    env = LazyVectorEnv(benchmark, config, args.batch_size)
    policy = make_policy("scripted", benchmark, config, args.batch_size)
    processors = benchmark.processors(config)
    plan = plan_episodes(benchmark, task, 1000, range(args.episodes))
    samples: list[tuple[int, float]] = []
    records: list[EpisodeRecord] = []
    started = time.perf_counter()

    def on_episode(record: EpisodeRecord) -> None:
        records.append(record)  # what evaluate_task keeps: one small record per episode
        if len(records) % args.every == 0:
            samples.append((len(records), rss_mib()))
            elapsed = time.perf_counter() - started
            print(f"{len(records):8d}  {samples[-1][1]:8.1f}  ({elapsed:.0f} s)", flush=True)

    print(f"{args.task}, obs={args.obs}, batch {args.batch_size}, {args.episodes} episodes")
    print("episodes  parent RSS (MiB)", flush=True)
    try:
        run_episodes(env.get(), policy, processors, plan, on_episode)
    finally:
        env.close()
    # From the second sample on: the first holds the one-time growth of the first episodes.
    first, base = samples[1] if len(samples) > 1 else samples[0]
    last, rss = samples[-1]
    growth = rss - base
    per_episode = growth * 1024 / max(1, last - first)
    share = 100 * growth / base
    print(f"growth from episode {first} to {last}: {growth:+.1f} MiB "
          f"({share:+.2f}% of {base:.1f} MiB; {per_episode:+.1f} KiB per episode)")  # fmt: skip


if __name__ == "__main__":
    main()
