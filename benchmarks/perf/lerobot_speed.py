"""A LeRobot policy through the plugin against ``lerobot-eval``: env-steps per second and peak
memory on the same task, policy, image size and batch size, side by side in one run.

Builds an ACT checkpoint (random weights, LeRobot's Meta-World layout, 480x480 as LeRobot's
wrapper renders), then alternates, for each round, ``lerobot-eval --eval.batch_size=B`` and
``pytest --benchmark-policy=lerobot:DIR --benchmark-batch-size=B`` (``-n 0``) on one Meta-World
task. Steps per second: env steps over the command's whole wall time (start-up included, so the
figures are what a user waits for); peak RSS of the process tree from ``wait4``. lerobot-eval
always writes videos of its first episodes (a second render per step); the plugin writes none.

    python benchmarks/perf/lerobot_speed.py [--rounds 3] [--episodes 2] [--batch 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TASK = "reach-v3"


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB, the largest process of the tree)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: nothing blocks on output
        process = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        log.seek(0)
        stderr = log.read()
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # pytest exits 1 when a check fails
        raise RuntimeError(f"{command[0]} failed:\n{stderr[-2000:]}")
    # Linux reports the larger of the process's own peak and its reaped children's.
    return elapsed, usage.ru_maxrss / 1024


def lerobot_eval(folder: Path, out: Path, episodes: int, batch: int) -> tuple[float, float, int]:
    binary = Path(sys.executable).with_name("lerobot-eval")
    seconds, rss = timed(
        [
            str(binary),
            f"--policy.path={folder}",
            "--policy.device=cpu",
            "--env.type=metaworld",
            f"--env.task={TASK}",
            f"--eval.batch_size={batch}",
            f"--eval.n_episodes={episodes}",
            f"--output_dir={out}",
        ],
        ROOT,
    )
    info = json.loads((out / "eval_info.json").read_text())
    successes = sum(sum(t["metrics"]["successes"]) for t in info["per_task"])
    if successes:
        print(f"note: {successes} lerobot-eval episodes succeeded; steps are an upper bound")
    # lerobot-eval steps every env of a batch until the batch's last episode ends: Meta-World's
    # 500 steps, where the random policy does not succeed.
    return seconds, rss, batch * 500 * -(-episodes // batch)


def plugin(folder: Path, metrics: Path, episodes: int, batch: int) -> tuple[float, float, int]:
    seconds, rss = timed(
        [
            sys.executable,
            "-m",
            "pytest",
            "benchmarks/test_metaworld.py",
            "-k",
            "test_rollout",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--benchmark-policy=lerobot:{folder}",
            f"--benchmark-task={TASK}",
            f"--benchmark-episodes={episodes}",
            f"--benchmark-batch-size={batch}",
            "--benchmark-image-size=480",
            "--benchmark-device=cpu",
            f"--benchmark-metrics={metrics}",
        ],
        ROOT,
    )
    rows = json.loads(metrics.read_text())["results"]
    return seconds, rss, sum(e["steps"] for r in rows for e in r["episodes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    import lerobot_models

    from pytest_benchmarks.core import rendering

    # The same GL backend for both (lerobot-eval picks none itself: OSMesa on a CPU).
    rendering.choose_backend()

    work = Path(tempfile.mkdtemp(prefix="lerobot-speed-"))
    inputs = {"observation.state": (4,), "observation.image": (3, 480, 480)}
    folder = lerobot_models.checkpoint("act", work / "act", inputs, action_dim=4)
    figures: dict[str, list[tuple[float, float, int]]] = {"lerobot-eval": [], "plugin": []}
    for round_ in range(args.rounds):
        figures["lerobot-eval"].append(
            lerobot_eval(folder, work / f"eval{round_}", args.episodes, args.batch)
        )
        figures["plugin"].append(
            plugin(folder, work / f"metrics{round_}.json", args.episodes, args.batch)
        )
        for name, runs in figures.items():
            seconds, rss, steps = runs[-1]
            rate = steps / seconds
            print(f"round {round_ + 1} {name}: {steps} steps in {seconds:.1f} s "
                  f"({rate:.2f} steps/s), peak RSS {rss:.0f} MiB", flush=True)  # fmt: skip
    print(f"\n{TASK}, ACT 480x480, batch {args.batch}, {args.episodes} episodes, "
          f"medians of {args.rounds} rounds:")  # fmt: skip
    rates = {}
    for name, runs in figures.items():
        rates[name] = statistics.median(steps / seconds for seconds, _, steps in runs)
        rss = statistics.median(r for _, r, _ in runs)
        print(f"  {name:<13} {rates[name]:6.2f} env-steps/s   peak RSS {rss:6.0f} MiB")
    print(f"  plugin / lerobot-eval: {rates['plugin'] / rates['lerobot-eval']:.2f}")


if __name__ == "__main__":
    main()
