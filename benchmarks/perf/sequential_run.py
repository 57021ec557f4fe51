"""Sequential gating in a real run: MT10 against the committed snapshots, fixed plan beside
``--benchmark-sequential``, with the scripted experts (no change) and a degraded expert (random
actions on a fraction of steps), episodes and wall time side by side.

Each cell is one pytest session of ``benchmarks/test_metaworld.py`` (the README's main job: every
test of each task, the first that runs the plan stops it) at 50 episodes per task (the
snapshots' count, so episodes pair), ``-n WORKERS``; printed as Markdown.

    python benchmarks/perf/sequential_run.py --repeats 3
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

ROOT = Path(__file__).resolve().parents[2]


def session(policy: str, sequential: bool, tasks: str, episodes: int, workers: int,
            out: Path) -> tuple[float, int, int, list[str], str, list[str]]:  # fmt: skip
    """Wall time, episodes run, tasks, each task's stop reason, the gate's closing line and the
    tasks it flagged."""
    command = [
        sys.executable, "-m", "pytest", str(ROOT / "benchmarks/test_metaworld.py"), "-q",
        "-p", "no:cacheprovider", "--benchmark-env=metaworld",
        f"--benchmark-task={tasks}", f"--benchmark-episodes={episodes}", "-n", str(workers),
        f"--benchmark-policy={policy}", f"--benchmark-metrics={out}",
    ]  # fmt: skip
    if sequential:
        command.append("--benchmark-sequential")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    rows = json.loads(out.read_text())["results"]
    closing = next((line for line in done.stdout.splitlines()
                    if line.startswith("snapshot gate: ")), done.stdout[-300:])  # fmt: skip
    stops = [row.get("stopped") or "whole plan" for row in rows]
    lines = done.stdout.splitlines()
    flagged = sorted({line.split()[1].rstrip(":").removeprefix("metaworld/")
                      for line in lines if line.startswith("  REGRESSION ")})  # fmt: skip
    return wall, sum(row["n_episodes"] for row in rows), len(rows), stops, closing, flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="MT10")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--noise", type=float, default=0.3, help="the degraded expert's fraction")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.tasks} x {args.episodes} episodes against the committed snapshots, -n "
          f"{args.workers}; median wall time of {args.repeats} run(s).\n")  # fmt: skip
    print("| policy | gate | episodes run | of the plan | wall time | decisions | flagged "
          "| gate's line |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for policy in ("scripted", f"scripted+noise:{args.noise}"):
            walls: dict[bool, float] = {}
            for sequential in (False, True):
                out = [Path(folder) / f"m{i}.json" for i in range(args.repeats)]
                runs = [session(policy, sequential, args.tasks, args.episodes, args.workers, o)
                        for o in out]  # fmt: skip
                walls[sequential] = statistics.median(r[0] for r in runs)
                _, used, tasks, stops, closing, flagged = runs[-1]
                kinds = [s.split(" after ")[0] for s in stops]
                decisions = ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds)))
                print(f"| `{policy}` | {'sequential' if sequential else 'fixed'} | {used} | "
                      f"{used / (tasks * args.episodes):.0%} | {walls[sequential]:.0f} s "
                      f"({walls[sequential] / walls[False]:.0%}) | {decisions} | "
                      f"{', '.join(flagged) or 'none'} | "
                      f"{closing.removeprefix('snapshot gate: ')} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
