"""Recording episodes: each slot's frames as it steps, one part file per finished episode.

A frame is what the policy saw at a step (every declared feature of the processed batch), the
action it took, and what the step returned (``next.reward``, ``next.done``, ``next.success``),
the layout of a LeRobot dataset's frame. Each finished episode goes to a part file of its own
(``<parts>/<task>/<episode>.npz``, written atomically), wherever it ran: an xdist worker, a
vector-env slot, or the API's process. The dataset is built from the parts afterwards, in
(task, episode index) order (``engine.dataset``), so it is the same for every batch size and
worker count, and the episodes of an interrupted run are kept.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.files import parts_dir, write_atomic
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics.resume import ResumeError

#: Per-step keys beside the observation features, in LeRobot's spelling.
STEP_KEYS = ("action", "next.reward", "next.done", "next.success")
_META = "__meta__"


@dataclass
class RecordedEpisode:
    """One finished episode: its task, the episode's record, and its frames by key."""

    task: TaskRef
    description: str
    record: EpisodeRecord
    #: Feature name (and each of STEP_KEYS) -> array with one row per frame.
    frames: dict[str, np.ndarray]
    #: The benchmark's control rate and robot, for the dataset's info.
    fps: int
    robot_type: str | None

    @property
    def length(self) -> int:
        return len(self.frames["action"])


def recorder_for(
    settings: Settings, benchmark: Benchmark, task: TaskRef, processors: EnvProcessors
) -> EpisodeRecorder | None:
    """The task's recorder when the run records (``settings.record``), else None."""
    if settings.record is None:
        return None
    return EpisodeRecorder(
        benchmark, task, processors, parts_dir(settings.record), only=settings.record_only
    )


class EpisodeRecorder:
    """Collects the frames of the episodes running in a vector env's slots."""

    def __init__(
        self,
        benchmark: Benchmark,
        task: TaskRef,
        processors: EnvProcessors,
        parts: Path,
        *,
        only: str = "all",
    ) -> None:
        self.task, self.parts, self.only = task, parts, only
        self.names = list(processors.features)
        self.description = processors.description
        self.fps, self.robot_type = benchmark.fps, benchmark.robot_type
        self._frames: dict[int, dict[str, list[np.ndarray]]] = {}

    def begin(self, slots: Sequence[int]) -> None:
        """Episodes start in ``slots``: their buffers start empty."""
        for slot in slots:
            self._frames[slot] = {key: [] for key in (*self.names, *STEP_KEYS)}

    def add(
        self,
        batch: Mapping[str, Any],
        actions: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        successes: np.ndarray,
        slots: Sequence[int],
    ) -> None:
        """One step of the running episodes in ``slots``: the batch the policy acted on and what
        the step returned. Copies, since vector envs may reuse their buffers."""
        for slot in slots:
            frames = self._frames[slot]
            for name in self.names:
                frames[name].append(np.array(batch[name][slot]))
            frames["action"].append(np.array(actions[slot], dtype=np.float32))
            frames["next.reward"].append(np.array([rewards[slot]], dtype=np.float32))
            frames["next.done"].append(np.array([dones[slot]], dtype=np.bool_))
            frames["next.success"].append(np.array([successes[slot]], dtype=np.bool_))

    def end(self, slot: int, record: EpisodeRecord) -> None:
        """The episode in ``slot`` ended: write its part file (unless it is filtered out)."""
        frames = self._frames.pop(slot)
        if self.only == "success" and not record.success:
            return
        stacked = {key: np.stack(rows) for key, rows in frames.items()}
        episode = RecordedEpisode(
            self.task, self.description, record, stacked, self.fps, self.robot_type
        )
        write_part(self.parts, episode)


def part_path(parts: Path, task: TaskRef, index: int) -> Path:
    return parts / task.id.replace("/", "__") / f"{index:09d}.npz"


def check_parts(settings: Settings, kept: Iterable[TaskResult]) -> None:
    """A resumed recording run's kept episodes are all in its parts folder (every episode, or
    the successful ones with ``record_only=success``); ResumeError naming the missing ones."""
    parts = parts_dir(settings.record) if settings.record is not None else None
    if parts is None:
        return
    for result in kept:
        wanted = [e for e in result.episodes if settings.record_only == "all" or e.success]
        missing = [e.index for e in wanted if not part_path(parts, result.task, e.index).is_file()]
        if missing:
            shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
            raise ResumeError(
                f"--benchmark-resume: the recording of {result.task.id}'s kept episodes "
                f"{shown} is missing from {parts}; the dataset would lack them: run without "
                "--benchmark-resume into a new --benchmark-record DIR"
            )


def write_part(parts: Path, episode: RecordedEpisode) -> Path:
    """Write one episode's part file atomically (no fsync: the parts are a step on the way to
    the dataset, and a machine that goes down loses the run anyway)."""
    path = part_path(parts, episode.task, episode.record.index)
    meta = {
        "task": asdict(episode.task),
        "description": episode.description,
        "record": asdict(episode.record),
        "fps": episode.fps,
        "robot_type": episode.robot_type,
    }
    data = io.BytesIO()
    arrays: dict[str, Any] = {**episode.frames, _META: np.array(json.dumps(meta))}
    np.savez(data, **arrays)
    write_atomic(path, data.getvalue(), fsync=False)
    return path


class PartError(ValueError):
    """A part file that cannot be read (empty, truncated, not this format); one line naming it."""


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """numpy, zipfile and json raise a dozen kinds of error on a damaged file: one PartError."""
    try:
        yield
    except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        size = path.stat().st_size if path.exists() else 0
        what = "empty" if size == 0 else f"{size} bytes, {one_line(exc)}"
        raise PartError(
            f"{path}: not a readable episode part ({what}); remove it to build the others"
        ) from None


def _meta(path: Path) -> dict[str, Any]:
    with _reading(path), np.load(path, allow_pickle=False) as data:
        return dict(json.loads(str(data[_META])))


def read_part(path: Path) -> RecordedEpisode:
    """One part file's episode; PartError when the file is damaged."""
    with _reading(path):
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data[_META]))
            frames = {key: data[key] for key in data.files if key != _META}
        return RecordedEpisode(
            TaskRef(**meta["task"]),
            meta["description"],
            EpisodeRecord(**meta["record"]),
            frames,
            int(meta["fps"]),
            meta["robot_type"],
        )


def part_files(parts: Path) -> list[Path]:
    """The part files under ``parts``, in dataset order: by task, then by episode index."""
    found = [path for path in parts.glob("*/*.npz") if not path.name.startswith(".")]
    # Task order: the task's sort key, read from its first part (directory names are ids).
    order: dict[str, tuple[Any, ...]] = {}
    for path in found:
        if path.parent.name not in order:
            task = TaskRef(**_meta(path)["task"])
            order[path.parent.name] = (task.env, task.suite, task.task_id, task.name)
    return sorted(found, key=lambda p: (order[p.parent.name], int(p.stem)))
