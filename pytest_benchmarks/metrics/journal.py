"""The per-episode journal: every finished episode on disk the moment it ends.

The metrics JSON is rewritten when a task ends; a run killed mid-task (SIGKILL, a lost
terminal, an out-of-memory kill, a crashed xdist worker, a power cut) would lose the episodes
that task had finished. So each process that runs episodes also appends to a journal of its
own, ``METRICS.journal/PID-TIME.jsonl`` beside the metrics JSON (one file per process: no two
writers share one): a header with the run's settings, then a line when a task starts, one per
finished episode and one when the task ends, each flushed and fsynced before the run goes on.
Every line carries a checksum of its content, so an edited or damaged record is caught.

``read`` merges a folder's files into one ``TaskResult`` per task: the episodes of every file
by index (a later file's record of an index replaces an earlier one's), the error and row of
the task's last end line, or, for a task whose process ended before its end line, the error
``Interrupted``. The controller fills in from it what no test report carried (a crashed or
killed worker's task), and ``--benchmark-resume`` carries on from it even where no metrics JSON
was written. A last line cut short by the kill is dropped with a note; any other damage is
refused, naming the file and line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult

VERSION = 1

#: The error of a task whose process ended before the task did.
INTERRUPTED = "Interrupted: the process running the task ended before it did (journal)"


class JournalWarning(UserWarning):
    """The journal could not be written (the run goes on without it)."""


class JournalError(ValueError):
    """A journal line that is damaged or edited (not only cut short at the end)."""


def folder_for(metrics: Path) -> Path:
    """The journal folder of the run whose metrics JSON is ``metrics``."""
    return metrics.with_name(metrics.name + ".journal")


def _checksum(entry: dict[str, Any]) -> str:
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _head(result: TaskResult) -> dict[str, Any]:
    """The task's row without its episodes (they have lines of their own)."""
    row = result.to_row()
    del row["episodes"]
    return row


class JournalWriter:
    """This process's journal file, opened on its first line."""

    def __init__(self, folder: Path, run: dict[str, Any]) -> None:
        self.folder = folder
        self.run = run
        self._file: IO[str] | None = None
        self.path: Path | None = None
        #: Why the journal could not be written; nothing more is written after it.
        self.error: str | None = None

    def _write(self, entry: dict[str, Any]) -> None:
        if self.error is not None:
            return
        try:
            if self._file is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self.path = self.folder / f"{os.getpid()}-{time.time_ns()}.jsonl"
                self._file = self.path.open("a", encoding="utf-8")
                header = {"event": "run", "version": VERSION, "pid": os.getpid(), "run": self.run}
                self._append(header)
            self._append(entry)
        except OSError as exc:
            # A full disk must not fail the run, which still writes its metrics JSON; this
            # process stops journaling rather than leave a damaged line mid-file.
            self.error = one_line(exc)
            warnings.warn(
                JournalWarning(
                    f"journal: {self.path or self.folder}: {self.error}; this process's "
                    "episodes are no longer journaled (the metrics JSON still holds each task)"
                ),
                stacklevel=2,
            )
            self.close()

    def _append(self, entry: dict[str, Any]) -> None:
        assert self._file is not None
        line = json.dumps({**entry, "sum": _checksum(entry)}, separators=(",", ":"))
        self._file.write(line + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def start(self, result: TaskResult) -> None:
        """A task starts (``result`` holds the episodes it carries on, if any)."""
        self._write({"event": "start", "at": time.time(), "row": _head(result)})
        for episode in result.episodes:
            self.episode(result.task.id, episode, result.policy)

    def episode(self, task_id: str, episode: EpisodeRecord, policy: dict[str, Any]) -> None:
        self._write(
            {"event": "episode", "id": task_id, "policy": policy, "episode": asdict(episode)}
        )

    def end(self, result: TaskResult) -> None:
        """The task ended, finished or not: its whole row."""
        self._write({"event": "end", "row": _head(result)})

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


@dataclass
class Journal:
    """What a journal folder holds: one merged result per task, and its files' headers."""

    results: dict[str, TaskResult] = field(default_factory=dict)
    #: Each file's run settings (the header), by file.
    runs: dict[Path, dict[str, Any]] = field(default_factory=dict)
    #: Lines dropped because a kill cut them short, in one line each.
    notes: list[str] = field(default_factory=list)


def _parse(line: str) -> dict[str, Any]:
    try:
        entry = json.loads(line)
    except ValueError:
        raise JournalError("not a journal line (not JSON)") from None
    if not isinstance(entry, dict) or "sum" not in entry:
        raise JournalError("not a journal line (no checksum)")
    if entry.pop("sum") != _checksum(entry):
        raise JournalError("its checksum does not match its content (edited or damaged)")
    return entry


def _lines(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """A file's entries; its last line dropped (with a note) when a kill cut it short."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    cut = not text.endswith("\n")  # the last line never got its newline
    entries = []
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        try:
            entries.append(_parse(line))
        except JournalError as exc:
            if cut and number == len(lines):
                notes.append(
                    f"journal: dropped {path}:{number}, a line cut short when the process "
                    "writing it ended"
                )
                continue
            raise JournalError(f"{path}:{number}: {exc}") from None
    return entries


def _apply(journal: Journal, path: Path, entry: dict[str, Any]) -> None:
    """One entry of a file, onto the merged results."""
    event = entry["event"]
    if event == "run":
        journal.runs[path] = entry["run"]
    elif event == "start":
        result = TaskResult.from_row({**entry["row"], "episodes": []})
        earlier = journal.results.get(result.task.id)
        result.episodes = earlier.episodes if earlier is not None else []
        result.error = INTERRUPTED  # until its end line
        journal.results[result.task.id] = result
    elif event == "episode":
        result = journal.results[entry["id"]]
        episode = EpisodeRecord(**entry["episode"])
        kept = [e for e in result.episodes if e.index != episode.index]
        result.episodes = sorted([*kept, episode], key=lambda e: e.index)
        result.policy = entry["policy"] or result.policy
    elif event == "end":
        ended = TaskResult.from_row({**entry["row"], "episodes": []})
        ended.episodes = journal.results[ended.task.id].episodes
        journal.results[ended.task.id] = ended
    else:
        raise KeyError(event)


def read(folder: Path) -> Journal:
    """Every file of ``folder`` merged, oldest first; an empty Journal without the folder."""
    journal = Journal()
    if not folder.is_dir():
        return journal
    for path in sorted(folder.glob("*.jsonl"), key=_age):
        for number, entry in enumerate(_lines(path, journal.notes), 1):
            try:
                _apply(journal, path, entry)
            except (KeyError, TypeError, ValueError) as exc:
                raise JournalError(f"{path}: entry {number}: not a journal entry ({exc})") from None
    return journal


def _age(path: Path) -> tuple[int, str]:
    """Files by the time their process opened them (the name's second part)."""
    _, _, stamp = path.stem.partition("-")
    return (int(stamp) if stamp.isdigit() else 0, path.name)


def discard(folder: Path) -> int:
    """Remove a journal folder; how many episode lines it held."""
    if not folder.is_dir():
        return 0
    count = 0
    for path in folder.glob("*.jsonl"):
        try:
            count += path.read_text(encoding="utf-8").count('"event":"episode"')
        except OSError:
            continue
    shutil.rmtree(folder, ignore_errors=True)
    return count
