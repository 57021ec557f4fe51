"""The per-episode journal: every finished episode on disk the moment it ends.

The metrics JSON is rewritten when a task ends; a run killed mid-task (SIGKILL, a lost
terminal, an out-of-memory kill, a crashed xdist worker, a power cut) would lose the episodes
that task had finished. So each process that runs episodes also appends to a journal of its
own, ``METRICS.journal/PID-TIME.jsonl`` beside the metrics JSON (one file per process: no two
writers share one): a header with the run's settings, then the run's own events
(``metrics.events``: the task started, each episode finished, the task ended), each flushed and
fsynced before the run goes on. Every line carries a checksum of its content, so a damaged
record is caught; the checksum is no signature, and a line edited with its checksum recomputed
reads as written (the journal is not tamper-evident).

``read`` merges a folder's files into one ``TaskResult`` per task: the episodes of every file
by index (a later file's record of an index replaces an earlier one's), the error and row of
the task's last end line, or, for a task whose process ended before its end line, the error
``Interrupted``. The controller fills in from it what no test report carried (a crashed or
killed worker's task), and ``--benchmark-resume`` carries on from it even where no metrics JSON
was written. A last line cut short by the kill is dropped with a note; any other damage is
refused, naming the file and line, as are a file a newer version wrote (its header's version
above ``VERSION``) and an episode that names another policy than its task's other episodes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import stat
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.metrics.events import EpisodeFinished, Event, TaskEnded, TaskStarted, parse
from pytest_benchmarks.metrics.gate.refusals import printable

#: 2: each line an event of ``metrics.events``; 1 (still read): lines of their own names.
VERSION = 2
#: A version 1 line's name and the event kind it was.
_V1_KINDS = {
    "run": "run",
    "start": TaskStarted.kind,
    "episode": EpisodeFinished.kind,
    "end": TaskEnded.kind,
}
#: What a line of an episode holds in its text, whichever version wrote it (``discard`` counts).
_EPISODE_MARKS = (b'"kind":"episode_finished"', b'"event":"episode"')

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
        #: Told at once when the journal cannot be written (else a warning says it).
        self.notify: Callable[[str], None] | None = None

    def _write(self, event: Event) -> None:
        if self.error is not None:
            return
        try:
            if self._file is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self.path = self.folder / f"{os.getpid()}-{time.time_ns()}.jsonl"
                self._file = self.path.open("a", encoding="utf-8")
                header = {"kind": "run", "version": VERSION, "pid": os.getpid(), "run": self.run}
                self._append(header)
            self._append({"at": time.time(), **event.wire()})
        except OSError as exc:
            # A full disk must not fail the run, which still writes its metrics JSON; this
            # process stops journaling rather than leave a damaged line mid-file.
            self.error = one_line(exc)
            line = (
                f"journal: {self.path or self.folder}: {self.error}; this process's "
                "episodes are no longer journaled (the metrics JSON still holds each task)"
            )
            if self.notify is not None:
                self.notify(line)
            else:
                warnings.warn(JournalWarning(line), stacklevel=2)
            self.close()

    def _append(self, entry: dict[str, Any]) -> None:
        assert self._file is not None
        line = json.dumps({**entry, "sum": _checksum(entry)}, separators=(",", ":"))
        self._file.write(line + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def start(self, result: TaskResult) -> None:
        """A task starts (``result`` holds the episodes it carries on, if any)."""
        self._write(TaskStarted.here(result.task.id, row=_head(result)))
        for episode in result.episodes:
            self.episode(result.task.id, episode, result.policy)

    def episode(self, task_id: str, episode: EpisodeRecord, policy: dict[str, Any]) -> None:
        self._write(EpisodeFinished.of(task_id, episode, policy))

    def end(self, result: TaskResult) -> None:
        """The task ended, finished or not: its whole row."""
        self._write(TaskEnded(result.task.id, _head(result)))

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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse(line: str) -> dict[str, Any]:
    try:
        entry = json.loads(line, parse_constant=_no_constant)
    except ValueError as exc:
        why = str(exc) if "JSON number" in str(exc) else "not JSON"
        raise JournalError(f"not a journal line ({why})") from None
    if not isinstance(entry, dict) or "sum" not in entry:
        raise JournalError("not a journal line (no checksum)")
    if entry.pop("sum") != _checksum(entry):
        raise JournalError("its checksum does not match its content (edited or damaged)")
    return entry


def _lines(path: Path, notes: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """A file's entries by line number; its last line dropped (with a note) when a kill cut it
    short."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    cut = not data.endswith(b"\n")  # the last line never got its newline
    entries = []
    for number, raw in enumerate(lines, 1):
        if not raw:
            continue
        try:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise JournalError("not a journal line (not UTF-8 text)") from None
            entries.append((number, _parse(line)))
        except JournalError as exc:
            if cut and number == len(lines):
                notes.append(
                    f"journal: dropped {path}:{number}, a line cut short when the process "
                    "writing it ended"
                )
                continue
            raise JournalError(f"{path}:{number}: {exc}") from None
    return entries


def _event(entry: dict[str, Any]) -> Event | dict[str, Any]:
    """A line's event; the header as it is. A version 1 line is read as the event it was."""
    entry = dict(entry)
    entry.pop("at", None)
    if "event" in entry:  # version 1
        name = entry.pop("event")
        entry["kind"] = _V1_KINDS[name]
        if name == "episode":
            entry["task"] = entry.pop("id")
        elif name != "run":
            entry["task"] = entry["row"]["id"]
    if entry["kind"] == "run":
        return entry
    return parse(entry)


@functools.cache
def _validators() -> dict[str, Any]:
    """The metrics schema's checks for what a journal line carries: an episode, a task row."""
    import jsonschema

    from pytest_benchmarks.metrics.document import schema

    document = schema()
    return {
        name: jsonschema.Draft202012Validator(
            {**document["$defs"][name], "$defs": document["$defs"]}
        )
        for name in ("episode", "task_row")
    }


def _check(name: str, data: Any) -> None:
    """``data`` against the metrics schema's ``name`` (ValueError naming the first problem)."""
    problem = next(iter(_validators()[name].iter_errors(data)), None)
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path) or name
        raise ValueError(f"{where}: {problem.message.splitlines()[0][:120]}")


def _check_version(path: Path, number: int, header: dict[str, Any]) -> None:
    """Refuse a file this code cannot read: a newer version's lines may mean what this
    version's do not (JournalError, naming the file, its version and the versions read)."""
    version = header.get("version", 1)
    if type(version) is not int or not 1 <= version <= VERSION:
        raise JournalError(
            f"{path}:{number}: journal version {printable(version)}; this pytest-benchmarks "
            f"reads versions 1 to {VERSION} (a newer version wrote it: carry the run on with that "
            "one)"
        )


#: The most characters of a policy's identity a refusal prints.
_POLICY_TEXT = 120


def _same_policy(path: Path, number: int, task: str, claimed: Any, kept: Any, what: str) -> None:
    """Refuse a line that names another policy than its task's earlier lines: one task's
    episodes are one policy's, whatever file holds them (``resume.same_policy`` holds the run's
    against them)."""
    if claimed and kept and claimed != kept:
        raise JournalError(
            f"{path}:{number}: {what} of {printable(task)} names policy "
            f"{printable(claimed, _POLICY_TEXT)}, its task's earlier lines "
            f"{printable(kept, _POLICY_TEXT)}; one task's episodes are one policy's "
            "(edited, or another run's file)"
        )


def _apply(journal: Journal, path: Path, number: int, entry: dict[str, Any]) -> None:
    """One line of a file, onto the merged results, checked against the metrics schema."""
    event = _event(entry)
    if isinstance(event, dict):
        _check_version(path, number, event)
        if not isinstance(event.get("run"), dict):
            raise ValueError("its header's run is not an object of settings")
        journal.runs[path] = event["run"]
        return
    if isinstance(event, EpisodeFinished):
        _check("episode", event.episode)
    elif isinstance(event, (TaskStarted, TaskEnded)):
        _check("task_row", {**event.row, "episodes": []})
    if isinstance(event, TaskStarted):
        result = TaskResult.from_row({**event.row, "episodes": []})
        earlier = journal.results.get(result.task.id)
        if earlier is not None:
            _same_policy(path, number, event.task, result.policy, earlier.policy, "the start line")
            result.episodes, result.policy = earlier.episodes, result.policy or earlier.policy
        result.error = INTERRUPTED  # until its end line
        journal.results[result.task.id] = result
    elif isinstance(event, EpisodeFinished):
        result = journal.results[event.task]
        episode = event.record()
        what = f"episode {episode.index}"
        _same_policy(path, number, event.task, event.policy, result.policy, what)
        kept = [e for e in result.episodes if e.index != episode.index]
        result.episodes = sorted([*kept, episode], key=lambda e: e.index)
        result.policy = event.policy or result.policy
    elif isinstance(event, TaskEnded):
        ended = event.result()
        earlier = journal.results[ended.task.id]
        _same_policy(path, number, event.task, ended.policy, earlier.policy, "the end line")
        ended.episodes = earlier.episodes
        ended.policy = ended.policy or earlier.policy
        journal.results[ended.task.id] = ended
    else:
        raise KeyError(event.kind)


#: A journal file's name: the pid and the time (ns) its process opened it.
_NAME = re.compile(r"[0-9]+-[0-9]+\.jsonl")


def files(folder: Path, notes: list[str]) -> list[Path]:
    """The folder's journal files, oldest first; anything else in it that looks like one (a
    FIFO, a folder, another name) is named in ``notes`` and skipped, never opened."""
    found = []
    for path in folder.glob("*.jsonl"):
        if not _NAME.fullmatch(path.name):
            notes.append(f"journal: skipped {path}: not a journal file's name (PID-TIME.jsonl)")
        elif path.is_symlink() or not stat.S_ISREG(path.lstat().st_mode):
            notes.append(f"journal: skipped {path}: not a regular file")
        else:
            found.append(path)
    return sorted(found, key=_age)


def read(folder: Path) -> Journal:
    """Every file of ``folder`` merged, oldest first; an empty Journal without the folder."""
    journal = Journal()
    if not folder.is_dir():
        return journal
    for path in files(folder, journal.notes):
        for number, entry in _lines(path, journal.notes):
            try:
                _apply(journal, path, number, entry)
            except JournalError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise JournalError(f"{path}:{number}: not a journal entry ({exc})") from None
    return journal


def _age(path: Path) -> tuple[int, str]:
    """Files by the time their process opened them (the name's second part)."""
    _, _, stamp = path.stem.partition("-")
    return (int(stamp) if stamp.isdigit() else 0, path.name)


@dataclass(frozen=True)
class Discarded:
    """What ``discard`` did: the episode lines its journal files held, and what it left."""

    episodes: int = 0
    #: Entries of the folder that are not this project's journal files, left where they are.
    left: tuple[Path, ...] = ()

    def line(self, folder: Path) -> str | None:
        """``journal: removed ...``/``journal: left ...``, or None where there is nothing to say."""
        said = []
        if self.episodes:
            said.append(
                f"journal: removed {folder}'s journal files, an earlier run's {self.episodes} "
                "finished episodes (--benchmark-resume carries such a run on)"
            )
        if self.left:
            names = ", ".join(p.name for p in self.left[:5])
            more = f" and {len(self.left) - 5} more" if len(self.left) > 5 else ""
            said.append(
                f"journal: left {len(self.left)} entries in {folder} that are not journal files "
                f"of this project's: {names}{more}"
            )
        return "; ".join(said) or None


class JournalPathError(OSError):
    """The journal's path holds something that is not a journal folder (the user's file)."""


def discard(folder: Path) -> Discarded:
    """Remove an earlier run's journal files from ``folder``, and only those.

    A journal file is one this project wrote: its name (``PID-TIME.jsonl``), a regular file
    (never a link: it is not followed), on the folder's own filesystem (a mount inside is never
    crossed), whose first line is a journal header with its checksum. Anything else in the
    folder is left where it is and named (``Discarded.left``); the folder goes only once empty.
    A folder that is a symbolic link is unlinked, never followed: the files it points at are
    another run's. A regular file (or anything else) at the folder's path is the user's, and
    refused (``JournalPathError``). A journal file that cannot be removed raises OSError: its
    episodes would mix into the new run's.
    """
    if folder.is_symlink():
        folder.unlink()
        return Discarded()
    if not folder.exists():
        return Discarded()
    if not folder.is_dir():
        raise JournalPathError(
            f"{folder} is a file, not a journal folder; move it away or give "
            "--benchmark-metrics another path"
        )
    device = folder.stat().st_dev
    count, left = 0, []
    for entry in sorted(folder.iterdir()):
        if not _is_journal_file(entry, device):
            left.append(entry)
            continue
        with contextlib.suppress(OSError):
            text = entry.read_bytes()
            count += sum(text.count(mark) for mark in _EPISODE_MARKS)
        entry.unlink()
    if not left:
        with contextlib.suppress(OSError):  # an empty read-only mount stays, harmlessly
            folder.rmdir()
    return Discarded(count, tuple(left))


#: The most of a file's first line read to tell a journal file from another.
_HEADER_BYTES = 1 << 20


def _is_journal_file(path: Path, device: int) -> bool:
    """Whether ``path`` is a journal file this project wrote (``discard``'s rule)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    if not _NAME.fullmatch(path.name) or not stat.S_ISREG(info.st_mode) or info.st_dev != device:
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(_HEADER_BYTES)
        entry = _parse(first.decode("utf-8"))
    except (OSError, UnicodeDecodeError, JournalError):
        return False
    return entry.get("kind", entry.get("event")) == "run"


def undiscarded(folder: Path, exc: OSError) -> str:
    """The one line for an earlier run's journal that ``discard`` could not remove."""
    return (
        f"journal: cannot remove {folder}, an earlier run's journal ({one_line(exc)}); remove "
        "it, or carry that run on with --benchmark-resume"
    )
