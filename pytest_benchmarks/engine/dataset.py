"""Recorded episodes as a LeRobotDataset, through LeRobot's own writer.

One process builds the dataset from the run's part files (``engine.recording``), in task then
episode order, so the dataset is the same whoever ran the episodes. Images are stored as
LeRobot ``image`` features (lossless PNG), so a frame holds exactly the pixels the policy saw.
Each episode's row in ``meta/episodes`` also carries where it came from: ``benchmark/task_id``,
``benchmark/episode`` (the episode index of the run), ``benchmark/seed``,
``benchmark/init_state`` and ``benchmark/success``; replaying its actions from that seed and
initial state reproduces its frames.
"""

from __future__ import annotations

import itertools
import os
import shutil
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.engine.recording import PartError, RecordedEpisode, part_files, read_part


class RecordError(RuntimeError):
    """The recorded episodes cannot become one dataset; the message says why in one line."""


@dataclass(frozen=True)
class DatasetSummary:
    root: Path
    episodes: int
    frames: int
    tasks: int
    size_bytes: int


def lerobot_features(episode: RecordedEpisode) -> dict[str, dict[str, Any]]:
    """LeRobot feature specs for an episode's frames: uint8 HxWx3 arrays are images."""
    features: dict[str, dict[str, Any]] = {}
    for key, rows in episode.frames.items():
        shape = tuple(int(n) for n in rows.shape[1:])
        if rows.dtype == np.uint8 and len(shape) == 3 and shape[-1] == 3:
            features[key] = {"dtype": "image", "shape": shape,
                             "names": ["height", "width", "channels"]}  # fmt: skip
        else:
            features[key] = {"dtype": str(rows.dtype), "shape": shape, "names": None}
    return features


def _same_layout(expected: Mapping[str, dict[str, Any]], episode: RecordedEpisode) -> str | None:
    got = lerobot_features(episode)
    if got == expected:
        return None
    differ = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
    return (
        f"{episode.task.id} episode {episode.record.index} has other features than the first "
        f"episode recorded ({', '.join(differ)}); one dataset holds one observation layout"
    )


def none_succeeded(parts: Path, only: str, results: Iterable[TaskResult]) -> str | None:
    """The line for a run that keeps only successful episodes (``only`` success) and ran
    episodes, none of which succeeded: nothing to record is no failure. No dataset is written
    (LeRobot's takes its features from a first episode), and an empty parts folder goes.
    None where there is something to build, or a reason to fail."""
    ran = [e for result in results for e in result.episodes]
    if only != "success" or not ran or any(e.success for e in ran):
        return None
    if parts.is_dir() and part_files(parts):
        return None
    shutil.rmtree(parts, ignore_errors=True)
    return f"recorded 0 episodes: none succeeded ({len(ran)} ran; --benchmark-record-only=success)"


def build_dataset(
    parts: Path, root: Path, progress: Callable[[int, int], None] | None = None
) -> DatasetSummary:
    """Write every part under ``parts`` into a new LeRobotDataset at ``root``; then delete them.

    The dataset is written into a temporary sibling of ``root`` and renamed to ``root`` when it
    is whole, so ``root`` is a complete dataset or absent. The dataset takes the benchmark's fps
    and robot type from the recorded episodes. When anything fails (RecordError, one line) the
    parts stay and nothing is left at ``root``, so no episode is lost and the build can be run
    again. ``progress`` sees (episodes written, episodes in all) after each episode.
    """
    building = root.with_name(f".{root.name}.building-{os.getpid()}")
    try:
        files = part_files(parts) if parts.is_dir() else []
        if not files:
            raise RecordError(f"no episode was recorded (nothing under {parts})")
        if root.exists() or root.is_symlink():
            raise RecordError(f"{root} already exists; move it away to build the dataset there")
        frames, tasks = _build(files, building, root, progress)
        os.rename(building, root)
    except PartError as exc:  # a damaged part file, named
        raise RecordError(str(exc)) from None
    except OSError as exc:
        raise RecordError(f"cannot write the dataset at {root}: {one_line(exc)}") from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    shutil.rmtree(parts)
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return DatasetSummary(root, len(files), frames, tasks, size)


def _build(
    files: list[Path], root: Path, final: Path, progress: Callable[[int, int], None] | None
) -> tuple[int, int]:
    """The dataset at ``root``, which becomes ``final`` (repository id ``local/NAME`` by the
    final name); (frames, tasks) written."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    # One episode in memory at a time: images can be large.
    episodes = (read_part(path) for path in files)
    first = next(episodes)
    features = lerobot_features(first)
    try:
        dataset = LeRobotDataset.create(
            repo_id=f"local/{final.name}",
            fps=first.fps,
            features=features,
            root=root,
            robot_type=first.robot_type,
            use_videos=False,
        )
    except (OSError, ValueError) as exc:  # named by the final path: the temporary one is gone
        raise RecordError(f"cannot create a LeRobot dataset at {final}: {one_line(exc)}") from None
    import datasets

    quiet = datasets.is_progress_bar_enabled()
    if quiet:  # a bar per episode from its Map calls would drown the run's own progress lines
        datasets.disable_progress_bars()
    try:
        with warnings.catch_warnings():
            # LeRobot's writer warns on every frame of its (1,)-shaped and bool features (numpy's
            # scalar conversion, a histogram of bools): nothing a user can act on.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            return _write(dataset, features, itertools.chain([first], episodes),
                          len(files), progress)  # fmt: skip
    finally:
        dataset.finalize()
        if quiet:
            datasets.enable_progress_bars()


def _write(
    dataset: Any,
    features: Mapping[str, dict[str, Any]],
    episodes: Iterator[RecordedEpisode],
    total: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[int, int]:
    """Add every episode to the dataset; (frames, tasks) written."""
    save_meta = dataset.meta.save_episode
    frames = 0
    tasks = set()
    try:
        for count, episode in enumerate(episodes, start=1):
            problem = _same_layout(features, episode)
            if problem:
                raise RecordError(problem)
            extra = {
                "benchmark/task_id": episode.task.id,
                "benchmark/episode": episode.record.index,
                "benchmark/seed": episode.record.seed,
                "benchmark/init_state": episode.record.init_state,
                "benchmark/success": episode.record.success,
            }
            # LeRobot's writer has no parameter for extra episode metadata; its metadata
            # object's save_episode takes the episode's row, so the provenance joins it there.
            dataset.meta.save_episode = _with_extra(save_meta, extra)
            for i in range(episode.length):
                frame = {key: rows[i] for key, rows in episode.frames.items()}
                frame["task"] = episode.description
                dataset.add_frame(frame)
            dataset.save_episode()
            frames += episode.length
            tasks.add(episode.task.id)
            if progress is not None:
                progress(count, total)
    finally:
        dataset.meta.save_episode = save_meta
    return frames, len(tasks)


def _with_extra(save: Callable[..., None], extra: dict[str, Any]) -> Callable[..., None]:
    def save_episode(
        episode_index: int,
        episode_length: int,
        episode_tasks: list[str],
        episode_stats: dict[str, dict[str, Any]],
        episode_metadata: dict[str, Any],
    ) -> None:
        save(episode_index, episode_length, episode_tasks, episode_stats,
             {**episode_metadata, **extra})  # fmt: skip

    return save_episode
