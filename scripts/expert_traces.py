"""The LIBERO expert's actions, step by step, as one digest per episode: run it before and after
a change to the expert that must not change its behaviour, and compare the two files.

    python scripts/expert_traces.py OUT.json [--tasks libero_goal/8,...] [--episodes 2]
                                    [--max-steps N]
    python scripts/expert_traces.py --compare BEFORE.json AFTER.json

Each episode is run as the harness runs it (seed ``1000 + i``, initial state ``i``, the
suite's step limit, state observations) and stops at success or the limit. The file holds, per
task, the step experts the plan used (with the pick-and-place's way into a covered space, where
it took one) and per episode a SHA-256 of every action's bytes, the steps and the success.
``--compare`` prints each difference and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.expert_action import EXPERT_KEY
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef

SEED = 1000


def experts_used(env: Any) -> list[str]:
    """The plan's step experts by class name; a pick-and-place that slid or tipped its object
    into a covered space says so."""
    names = []
    for step in env._expert.steps:
        name = type(step).__name__
        for way in ("slide", "tip"):  # a pick-and-place's SlideIn or TipIn, once it took one
            if type(getattr(step, way, None)).__name__ in ("SlideIn", "TipIn"):
                name += f"+{way}"
        names.append(name)
    return names


def trace(task: TaskRef, episodes: int, max_steps: int) -> dict[str, Any]:
    """The digests of ``episodes`` episodes of ``task``, and the experts they used."""
    from pytest_benchmarks.envs.libero.env import LiberoTaskEnv

    env = LiberoTaskEnv(EnvConfig(task, max_steps, SEED, obs="state", privileged=True))
    runs, used = [], set()
    try:
        for index in range(episodes):
            obs, _ = env.reset(seed=SEED + index, options={"init_state": index, "index": index})
            digest, success, steps = hashlib.sha256(), False, 0
            while steps < max_steps and not success:
                action = np.asarray(obs[EXPERT_KEY], dtype=np.float64)
                digest.update(action.tobytes())
                obs, _, _, _, info = env.step(action)
                success, steps = info["success"], steps + 1
            used.update(experts_used(env))
            runs.append({"sha256": digest.hexdigest(), "steps": steps, "success": success})
    finally:
        env.close()
    return {"experts": sorted(used), "episodes": runs}


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per task or episode that differs."""
    lines = [f"{key}: only in one file" for key in sorted(set(before) ^ set(after))]
    for key in sorted(set(before) & set(after)):
        runs = before[key]["episodes"], after[key]["episodes"]
        if len(runs[0]) != len(runs[1]):
            lines.append(f"{key}: {len(runs[0])} episodes != {len(runs[1])}")
        for index, (a, b) in enumerate(zip(*runs, strict=False)):
            if a != b:
                lines.append(f"{key} episode {index}: {a} != {b}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--tasks", default="", help="comma-separated SUITE/INDEX; all by default")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--max-steps", type=int, help="a shorter limit than the suite's own")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        lines = compare(before, after)
        print("\n".join(lines) or f"same: {len(before)} tasks")
        return 1 if lines else 0
    if args.out is None:
        parser.error("OUT is required unless --compare is given")
    libero = catalog.get("libero")
    wanted = {t for t in args.tasks.split(",") if t}
    tasks = [t for t in libero.tasks() if (not wanted or t.key in wanted)]
    if wanted - {t.key for t in tasks}:
        parser.error(f"--tasks: unknown {sorted(wanted - {t.key for t in tasks})}")
    found: dict[str, Any] = {}
    for number, task in enumerate(tasks, 1):
        if libero.scripted_missing(task):
            continue
        limit = min(libero.default_max_steps(task), args.max_steps or sys.maxsize)
        found[task.key] = trace(task, args.episodes, limit)
        args.out.write_text(json.dumps(found, indent=1))
        print(f"[{number}/{len(tasks)}] {task.key}: {found[task.key]['experts']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
