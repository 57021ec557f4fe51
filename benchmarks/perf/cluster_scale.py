"""One run on one machine's xdist workers against the same run as a Slurm array and on a Ray
cluster, each also with a node lost mid-task: wall time, the overhead per task, and what the
lost node's task kept and ran again.

The array runs on a single-node Slurm cluster of its own (``cluster.local_slurm``: needs root
and Debian's slurm-wlm and munge), two elements on this machine's two cores, as ``-n 2`` has
two workers; the Ray cluster (``cluster.local_ray``) is a head and two worker nodes of one CPU
each, and a killed node is replaced before the next repeat. Wall time is from the command to
the (merged) metrics JSON; neither cluster's start counts. Printed as Markdown.

    python benchmarks/perf/cluster_scale.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import psutil

from pytest_benchmarks.cluster import local_ray
from pytest_benchmarks.cluster.local_slurm import cluster, start_again_soon, unavailable, wait_empty
from pytest_benchmarks.metrics import journal

ROOT = Path(__file__).resolve().parents[2]


def pytest_args(tasks: str, episodes: int) -> list[str]:
    return [str(ROOT / "benchmarks/test_metaworld.py"), "-k", "test_success_rate",
            "-p", "no:cacheprovider", "--benchmark-env=metaworld", f"--benchmark-task={tasks}",
            f"--benchmark-episodes={episodes}", "--benchmark-batch-size=1"]  # fmt: skip


def xdist(args: list[str], out: Path) -> tuple[float, dict[str, list]]:
    started = time.perf_counter()
    command = [sys.executable, "-m", "pytest", *args, "-n", "2", f"--benchmark-metrics={out}"]
    subprocess.run(command, cwd=ROOT, capture_output=True, check=True)
    return time.perf_counter() - started, outcomes(out)


def array(args: list[str], out: Path, env: dict[str, str], requeue_after: int = 0
          ) -> tuple[float, dict[str, list], dict[str, int]]:  # fmt: skip
    """An array of two shards and its merge; with ``requeue_after``, element 2 is requeued
    once its journal holds that many episodes, and allowed to start again at once."""
    started = time.perf_counter()
    said = subprocess.run(
        [sys.executable, "-m", "pytest_benchmarks.cli", "slurm", "--shards=2", f"--out={out}",
         "--", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    array_id = said[said.index("array") + 2]
    loss: dict[str, int] = {}
    if requeue_after:
        folder = journal.folder_for(out / "shard-2-of-2.json")
        while True:
            finished = _journalled(folder)
            if finished >= requeue_after:
                break
            time.sleep(0.05)
        subprocess.run(["scontrol", "requeue", f"{array_id}_2"], env=env, check=True)
        # Once it waits to start again, its first session has ended: the journal holds all
        # that session finished (the restart comes two seconds later at the earliest).
        start_again_soon(f"{array_id}_2", env)
        loss["finished before"] = _journalled(folder)
    wait_empty(env, limit_s=3600)
    wall = time.perf_counter() - started
    if requeue_after:
        log = (out / "logs" / "shard-2.out").read_text()
        ran = re.findall(r"resume: .*?; \d+ tasks run (\d+) episodes", log)
        planned = sum(r["planned_episodes"] for r in _rows(out / "shard-2-of-2.json"))
        loss["kept"] = planned - int(ran[-1]) if ran else 0
        loss["finished ones run again"] = loss["finished before"] - loss["kept"]
    return wall, outcomes(out / "metrics.json"), loss


def on_ray(args: list[str], out: Path, ray: local_ray.LocalRay, kill_after: int = 0
           ) -> tuple[float, dict[str, list], dict[str, int]]:  # fmt: skip
    """The session on the Ray cluster; with ``kill_after``, the node of a running task is
    killed once the controller's journal holds that many episodes, and a new node added."""
    started = time.perf_counter()
    env = {**os.environ, **ray.env}
    command = [sys.executable, "-m", "pytest", *args, f"--benchmark-ray={ray.address}",
               f"--benchmark-metrics={out}"]  # fmt: skip
    session = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    loss: dict[str, int] = {}
    if kill_after:
        folder = journal.folder_for(out)
        while _journalled(folder) < kill_after:
            time.sleep(0.05)
        busy = [p for p in psutil.process_iter(["name"]) if p.info["name"] == "ray::run_on_node"]
        ray.kill_node(busy[0].parent())
    said, _ = session.communicate(timeout=3600)
    wall = time.perf_counter() - started
    if session.returncode != 0:
        raise SystemExit(f"the session on Ray failed:\n{said}")
    if kill_after:
        found = re.search(r"lost after (\d+) of (\d+) episodes", said)
        if found is None:
            raise SystemExit(f"no node loss was reported:\n{said}")
        kept, planned = int(found[1]), int(found[2])
        loss = {"kept": kept, "run after": planned - kept}
        ray.add_node(1)
    return wall, outcomes(out), loss


def _journalled(folder: Path) -> int:
    try:
        return sum(len(r.episodes) for r in journal.read(folder).results.values())
    except (OSError, journal.JournalError):
        return 0


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text())["results"]


def outcomes(path: Path) -> dict[str, list]:
    """Per task, the episodes' outcomes (what must not depend on where they ran)."""
    return {
        row["id"]: sorted(
            (e["index"], e["success"], e["steps"], e["initial_digest"]) for e in row["episodes"]
        )
        for row in _rows(path)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="MT10")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--requeue-after", type=int, default=15,
                        help="episodes element 2 finishes before it is requeued")  # fmt: skip
    args = parser.parse_args()
    why = unavailable()
    if why:
        raise SystemExit(f"cluster_scale: no Slurm cluster here: {why}")
    run_args = pytest_args(args.tasks, args.episodes)
    names = ("xdist", "array", "requeued", "ray", "ray_lost")
    walls: dict[str, list[float]] = {name: [] for name in names}
    losses: dict[str, list[dict[str, int]]] = {"requeued": [], "ray_lost": []}
    with (tempfile.TemporaryDirectory() as folder, cluster(Path(folder) / "slurm") as slurm,
          local_ray.cluster(nodes=2, cpus=1) as ray):  # fmt: skip
        env = {**os.environ, **slurm}
        for i in range(args.repeats):
            base = Path(folder) / str(i)
            wall, whole = xdist(run_args, base / "xdist.json")
            walls["xdist"].append(wall)
            runs = {
                "array": partial(array, run_args, base / "array", env),
                "requeued": partial(array, run_args, base / "requeued", env, args.requeue_after),
                "ray": partial(on_ray, run_args, base / "ray.json", ray),
                "ray_lost": partial(on_ray, run_args, base / "ray-lost.json", ray,
                                    args.requeue_after),
            }  # fmt: skip
            for name, go in runs.items():
                wall, got, loss = go()
                walls[name].append(wall)
                if got != whole:
                    raise SystemExit(f"{name}: the episodes differ from -n 2's: {got} != {whole}")
                if name in losses:
                    losses[name].append(loss)
    tasks = len(whole)
    base = statistics.median(walls["xdist"])
    print(
        f"{args.tasks} x {args.episodes} episodes ({tasks} tasks), scripted experts, 2 cores; "
        f"median of {args.repeats} run(s); per-episode records equal in every row.\n"
    )
    print("| how | wall time | against -n 2 | overhead per task |")
    print("|---|---|---|---|")
    labels = {"xdist": "xdist, `-n 2`", "array": "Slurm array, 2 elements",
              "requeued": "Slurm array, element 2 requeued mid-run",
              "ray": "Ray, 2 nodes of 1 CPU", "ray_lost": "Ray, a node killed mid-run"}  # fmt: skip
    for name in names:
        wall = statistics.median(walls[name])
        print(f"| {labels[name]} | {wall:.1f} s | {wall / base:.2f}x | "
              f"{(wall - base) / tasks:+.2f} s |")  # fmt: skip
    print("\n| requeued element | finished before the kill | kept on restart | finished ones "
          "run again |\n|---|---|---|---|")  # fmt: skip
    for loss in losses["requeued"]:
        print(f"| shard 2/2 | {loss['finished before']} | {loss['kept']} | "
              f"{loss['finished ones run again']} |")  # fmt: skip
    # The kept count is the session's own (its "lost after K" line): which of them the node
    # had finished is proven by tests/cluster/test_ray.py, whose policy counts its starts.
    print("\n| Ray node killed | its task's episodes kept | run on another node |"
          "\n|---|---|---|")  # fmt: skip
    for loss in losses["ray_lost"]:
        print(f"| a running task's node | {loss['kept']} | {loss['run after']} |")


if __name__ == "__main__":
    main()
