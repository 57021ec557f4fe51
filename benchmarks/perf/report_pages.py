"""The HTML report's and the history page's size and time to write, at the sizes people have:

- ``mt10-videos``: MT10 with the expert's actions half replaced by random ones, the failing
  episodes recorded (``video="failures"``), and ``report --html`` embedding their videos;
- ``libero130``: LIBERO's 130 tasks, 50 episodes each, against a baseline (outcomes drawn at
  random on LIBERO's real task ids: the page's cost, not LIBERO's);
- ``history-mt10``: ten and more real runs of MT10 with noise rising from 0 to 0.5;
- ``history-mt50``: MT50 over 20 runs (outcomes drawn at random, each run a little worse).

    python benchmarks/perf/report_pages.py [--parts mt10-videos,libero130,history-mt10,history-mt50]
        [--episodes 10] [--max-steps 150] [--runs 11] [--out DIR]

Prints one line per part: tasks, runs, the page's size and the median of three writes. The
pages stay in --out (a temporary folder by default) to be opened.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.cli import main as cli
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.metrics import history, history_page
from pytest_benchmarks.metrics.document import build_metrics, write_metrics

PARTS = ("mt10-videos", "libero130", "history-mt10", "history-mt50")


def timed(write: Any, page: Path) -> tuple[float, int]:
    """The median of three writes of ``page``, and its size."""
    times = []
    for _ in range(3):
        page.unlink(missing_ok=True)
        started = time.perf_counter()
        status = write()
        times.append(time.perf_counter() - started)
        if status != 0:
            raise SystemExit(f"{page}: the command refused to write it (exit status {status})")
    return statistics.median(times), page.stat().st_size


def template(out: Path) -> dict:
    """A real run block (one short episode of reach-v3) for the drawn runs to carry."""
    metrics = out / "template.json"
    if not metrics.exists():
        evaluate("metaworld", "scripted", tasks=["reach-v3"], episodes=1, max_steps=5,
                 sync=True, metrics=metrics)  # fmt: skip
    return json.loads(metrics.read_text())["run"]


def drawn(benchmark: str, rate: float, episodes: int, seed: int, run: dict) -> dict:
    """A run of every task of ``benchmark`` whose episodes succeed with ``rate``."""
    rng = np.random.default_rng(seed)
    results = []
    for task in catalog.get(benchmark).tasks():
        wins = rng.random(episodes) < rate
        records = [EpisodeRecord(i, 1000 + i, i, bool(w), 80, 0.0, 0.0, 0.0)
                   for i, w in enumerate(wins)]  # fmt: skip
        results.append(TaskResult(task, episodes=records, planned=episodes, eval_s=1.0))
    run = {**run, "envs": [benchmark], "tasks": [benchmark], "episodes": episodes}
    return build_metrics(results, run, "scripted")


def mt10_videos(args: argparse.Namespace, out: Path) -> str:
    metrics = out / "mt10-videos" / "run.json"
    evaluate("metaworld", "scripted+noise:0.5", tasks=["MT10"], episodes=args.episodes,
             max_steps=args.max_steps, video="failures", image_size=64,
             metrics=metrics)  # fmt: skip
    page = metrics.with_name("report.html")
    videos = sorted(metrics.parent.rglob("*.mp4"))
    seconds, size = timed(lambda: cli(["report", str(metrics), "--html", str(page)]), page)
    mb = sum(v.stat().st_size for v in videos) / 1024**2
    return (f"mt10-videos: 10 tasks, {len(videos)} failing episodes' videos ({mb:.1f} MB): "
            f"page {size / 1024**2:.1f} MB, written in {seconds:.2f} s")  # fmt: skip


def libero130(args: argparse.Namespace, out: Path) -> str:
    folder = out / "libero130"
    folder.mkdir(parents=True, exist_ok=True)
    run = template(out)
    write_metrics(folder / "old.json", drawn("libero", 0.8, 50, 1, run))
    write_metrics(folder / "new.json", drawn("libero", 0.7, 50, 2, run))
    page = folder / "report.html"
    command = ["report", str(folder / "new.json"), "--baseline", str(folder / "old.json"),
               "--html", str(page), "-o", str(folder / "report.md")]  # fmt: skip
    seconds, size = timed(lambda: cli(command), page)
    return (f"libero130: 130 tasks, 50 episodes, with a baseline: page {size / 1024:.0f} KB, "
            f"written in {seconds:.2f} s")  # fmt: skip


def history_mt10(args: argparse.Namespace, out: Path) -> str:
    folder = out / "history-mt10"
    runs = []
    for step, noise in enumerate(np.linspace(0.0, 0.5, args.runs)):
        runs.append(folder / f"noise-{step:02d}-{noise:.2f}.json")
        evaluate("metaworld", f"scripted+noise:{noise:.2f}", tasks=["MT10"],
                 episodes=args.episodes, max_steps=args.max_steps, metrics=runs[-1])  # fmt: skip
        time.sleep(1.0)  # a run's start is recorded to the second
    return _history("history-mt10", 10, runs, folder)


def history_mt50(args: argparse.Namespace, out: Path) -> str:
    folder = out / "history-mt50"
    folder.mkdir(parents=True, exist_ok=True)
    run, now = template(out), datetime.now(UTC)
    runs = []
    for step in range(20):
        runs.append(folder / f"run-{step:02d}.json")
        started = (now + timedelta(hours=step)).isoformat(timespec="seconds")
        document = drawn("metaworld", 0.9 - 0.02 * step, 20, step, {**run, "started_at": started})
        write_metrics(runs[-1], document)
    return _history("history-mt50", 50, runs, folder)


def _history(name: str, tasks: int, runs: list[Path], folder: Path) -> str:
    page, summary = folder / "history.html", folder / "history.md"
    command = ["history", *map(str, runs), "--html", str(page), "-o", str(summary)]
    seconds, size = timed(lambda: cli(command), page)
    documents = [history.Run(p.name, p, json.loads(p.read_text())) for p in runs]
    series = history.build(documents, 0.05, "stat")
    history_page.chart(series, folder / "history.png")
    flagged = sum(len(step.flagged) for one in series for step in one.steps)
    return (f"{name}: {tasks} tasks over {len(runs)} runs ({len(series)} series, {flagged} task "
            f"steps flagged): page {size / 1024:.0f} KB, written in {seconds:.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--max-steps", type=int, default=150)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    parts = args.parts.split(",")
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)} (valid: {', '.join(PARTS)})")
    out = args.out or Path(tempfile.mkdtemp(prefix="report-pages-"))
    for part in parts:
        print(globals()[part.replace("-", "_")](args, out), flush=True)
    print(f"pages in {out}")


if __name__ == "__main__":
    main()
