"""The per-episode journal's cost: the main job (MT10, 50 episodes per task, the scripted
experts) through the run engine with the journal and without it, runs interleaved, and the time
spent writing and fsyncing journal lines (timed around each line's write).

    python benchmarks/perf/journal_cost.py [--episodes 50] [--tasks MT10] [--repeats 3]

Prints the median wall time of each mode, their ratio, and the journal's own time per episode.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_benchmarks.api import run
from pytest_benchmarks.core import validation
from pytest_benchmarks.core.selection import select
from pytest_benchmarks.engine.run import RunEngine
from pytest_benchmarks.metrics import journal


def once(journaling: bool, args: argparse.Namespace, folder: Path) -> tuple[float, float, int]:
    """One run: its wall time, the time spent in journal writes and the lines written."""
    settings = validation.build(
        root=folder, env=["metaworld"], task=[args.tasks], episodes=args.episodes,
        metrics=folder / "metrics.json",
    )  # fmt: skip
    engine = RunEngine.start(settings, select(settings).tasks, journaling=journaling)
    spent = [0.0, 0]
    append = journal.JournalWriter._append

    def timed(self: journal.JournalWriter, entry: dict[str, Any]) -> None:
        started = time.perf_counter()
        append(self, entry)
        spent[0] += time.perf_counter() - started
        spent[1] += 1

    journal.JournalWriter._append = timed  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        out = run(engine, "scripted", write=True)
        wall = time.perf_counter() - started
    finally:
        journal.JournalWriter._append = append  # type: ignore[method-assign]
    assert sum(r.n_episodes for r in out.results) == args.episodes * len(out.results)
    return wall, spent[0], int(spent[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--tasks", default="MT10")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    walls: dict[bool, list[float]] = {True: [], False: []}
    writes: list[tuple[float, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for journaling in (repeat % 2 == 0, repeat % 2 != 0):  # alternate which goes first
                wall, spent, lines = once(journaling, args, Path(tmp) / f"{repeat}-{journaling}")
                walls[journaling].append(wall)
                if journaling:
                    writes.append((spent, lines))
                print(f"run {repeat + 1}, journal {'on ' if journaling else 'off'}: {wall:.1f} s")
    on, off = statistics.median(walls[True]), statistics.median(walls[False])
    # Lines: a header per process, and per task a start, its episodes and an end.
    spent, lines = statistics.median(s for s, _ in writes), writes[0][1]
    print(f"median wall: journal on {on:.2f} s, off {off:.2f} s, ratio {on / off:.4f}")
    print(
        f"journal writes: {spent:.3f} s for {lines} lines ({1000 * spent / lines:.2f} ms per "
        f"line, fsync included), {100 * spent / on:.2f}% of the run"
    )


if __name__ == "__main__":
    main()
