"""LeRobot's own results, ``lerobot-eval``'s ``eval_info.json``, as a run the gate can judge.

Two layouts are read. The multi-task one (``eval_policy_all``, LeRobot 0.4 to 0.6 and main):
``per_task`` entries of ``task_group``, ``task_id`` and ``metrics`` (``successes``,
``sum_rewards``, ``max_rewards``), with ``per_group`` and ``overall`` aggregates; LeRobot's main
branch adds ``n_success``, ``pc_success`` and ``pc_success_ci95`` beside them, which must agree
with the successes. The single-env one (``eval_policy``): ``per_episode`` entries with their
seeds, and ``aggregated``. A task is named ``TASK_GROUP/TASK_ID``, as this plugin names the
tasks of ``lerobot:TYPE`` and of LIBERO.

The multi-task layout keeps no seeds: LeRobot seeds episode *i* of every task with the run's
start seed plus *i*, so its episodes carry ``SEEDLESS`` and pair by index with another such
file (runs taken to share their start seed), and with nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef

#: What a seedless episode of the multi-task layout carries as its seed.
SEEDLESS = -1
#: The benchmark name such a file's tasks are given (their ids: ``lerobot-eval/GROUP/ID``).
SOURCE = "lerobot-eval"
#: The single-env layout's one task.
SINGLE_TASK = "eval/0"


class EvalInfoError(ValueError):
    """An ``eval_info.json`` that cannot be read as a run; the message is one line."""


def is_eval_info(document: object) -> bool:
    """Whether a JSON document is ``lerobot-eval``'s, not this plugin's metrics file."""
    return (
        isinstance(document, dict)
        and "schema_version" not in document
        and isinstance(document.get("per_task", document.get("per_episode")), list)
    )


def read(document: Mapping[str, Any], path: Path) -> tuple[list[TaskResult], str]:
    """The file's tasks as results, and a line that says how it was read."""
    if isinstance(document.get("per_task"), list):
        results = [_task(entry, path, n) for n, entry in enumerate(document["per_task"])]
        _shared_videos(results)
        seen: dict[str, int] = {}
        for n, result in enumerate(results):
            first = seen.setdefault(result.task.key, n)
            if first != n:
                raise EvalInfoError(
                    f"{path}: per_task[{n}] repeats task {result.task.key} (per_task[{first}])"
                )
        _check_total(document.get("overall"), results, path)
        return results, (
            f"{path}: lerobot-eval's eval_info.json, {len(results)} tasks; it holds no seeds, so "
            "its episodes pair by index with another such file (both runs taken to start at the "
            "same --seed), and with no other"
        )
    episodes = [_seeded(entry, path, n) for n, entry in enumerate(document["per_episode"])]
    aggregated = document.get("aggregated")
    if isinstance(aggregated, dict):
        wins = sum(e.success for e in episodes)
        _check_rate(aggregated, wins, len(episodes), f"{path}: aggregated")
    suite, _, task_id = SINGLE_TASK.partition("/")
    ref = TaskRef(SOURCE, suite, task_id, int(task_id), "", SINGLE_TASK)
    result = TaskResult(ref, episodes, planned=len(episodes), policy={"source": SOURCE})
    return [result], (
        f"{path}: lerobot-eval's single-env eval_info.json, {len(episodes)} episodes with their "
        f"seeds (one task, named {SINGLE_TASK})"
    )


def _task(entry: object, path: Path, n: int) -> TaskResult:
    where = f"{path}: per_task[{n}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
        raise EvalInfoError(f"{where}: not an object with task_group, task_id and metrics")
    group, task_id = entry.get("task_group"), entry.get("task_id")
    if (
        not isinstance(group, str)
        or not group
        or isinstance(task_id, bool)
        or not isinstance(task_id, (int, str))
    ):
        raise EvalInfoError(f"{where}: task_group must be a name and task_id a number or name")
    metrics = entry["metrics"]
    successes = _flags(metrics.get("successes"), f"{where}.metrics.successes")
    sums = _numbers(metrics.get("sum_rewards"), len(successes), f"{where}.metrics.sum_rewards")
    maxes = _numbers(metrics.get("max_rewards"), len(successes), f"{where}.metrics.max_rewards")
    _check_counts(entry, successes, where)
    key = f"{group}/{task_id}"
    number = task_id if isinstance(task_id, int) else 0
    ref = TaskRef(SOURCE, group, str(task_id), number, "", key)
    videos = _videos(metrics.get("video_paths"), f"{where}.metrics.video_paths")
    episodes = [
        EpisodeRecord(i, SEEDLESS, 0, success, 0, sums[i], maxes[i], 0.0,
                      video=videos[i] if i < len(videos) else None)
        for i, success in enumerate(successes)
    ]  # fmt: skip
    return TaskResult(ref, episodes, planned=len(episodes), policy={"source": SOURCE})


def _videos(paths: object, where: str) -> list[str]:
    """The videos lerobot-eval rendered: its first episodes', episode *i* in ``paths[i]``."""
    if paths is None:
        return []
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise EvalInfoError(f"{where}: not a list of video files")
    return paths


def _shared_videos(results: list[TaskResult]) -> None:
    """A video file two tasks name is neither's: lerobot-eval (0.6) renders every task into
    one folder under the same names, so the file holds whichever task wrote it last."""
    owners: dict[str, set[str]] = {}
    for result in results:
        for episode in result.episodes:
            if episode.video is not None:
                owners.setdefault(episode.video, set()).add(result.task.key)
    for result in results:
        result.episodes = [_unshared(episode, owners) for episode in result.episodes]


def _unshared(episode: EpisodeRecord, owners: dict[str, set[str]]) -> EpisodeRecord:
    tasks = owners.get(episode.video or "", set())
    if len(tasks) < 2:
        return episode
    why = (
        f"not shown: lerobot-eval wrote {episode.video} for {len(tasks)} tasks "
        f"({', '.join(sorted(tasks)[:3])}); it holds only the last one's episode"
    )
    return replace(episode, video=None, video_error=why)


def _seeded(entry: object, path: Path, n: int) -> EpisodeRecord:
    where = f"{path}: per_episode[{n}]"
    if not isinstance(entry, dict):
        raise EvalInfoError(f"{where}: not an object")
    index, seed, success = entry.get("episode_ix", n), entry.get("seed"), entry.get("success")
    if isinstance(index, bool) or not isinstance(index, int) or index != n:
        raise EvalInfoError(f"{where}: episode_ix is {index!r}, not {n}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EvalInfoError(f"{where}: seed is {seed!r}, not an integer")
    (flag,) = _flags([success], f"{where}.success")
    rewards = _numbers([entry.get("sum_reward", 0.0), entry.get("max_reward", 0.0)], 2, where)
    return EpisodeRecord(index, seed, 0, flag, 0, rewards[0], rewards[1], 0.0)


def _flags(values: object, where: str) -> list[bool]:
    """Success flags: booleans, or 0/1 as LeRobot's reductions may give."""
    if not isinstance(values, list):
        raise EvalInfoError(f"{where}: missing, or not a list of success flags")
    flags = []
    for value in values:
        if value not in (True, False, 0, 1):
            raise EvalInfoError(f"{where}: {value!r} is not a success flag (true/false, 0/1)")
        flags.append(bool(value))
    return flags


def _numbers(values: object, count: int, where: str) -> list[float]:
    """Rewards, one per episode; a list LeRobot left out gives NaN (not compared)."""
    if values is None:
        return [math.nan] * count
    if not isinstance(values, list) or len(values) != count:
        raise EvalInfoError(f"{where}: not a list of {count} numbers, one per episode")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        raise EvalInfoError(f"{where}: holds a value that is not a number")
    return [float(v) for v in values]


#: How far a stated percentage may be from the flags' (LeRobot rounds none; a file may).
_PC_TOLERANCE = 0.01


def _check_counts(entry: Mapping[str, Any], successes: Sequence[bool], where: str) -> None:
    """LeRobot main's ``n_episodes``/``n_success``/``pc_success``/``pc_success_ci95`` beside
    the flags must agree with them."""
    for key, value in (("n_episodes", len(successes)), ("n_success", sum(successes))):
        if key in entry and entry[key] != value:
            raise EvalInfoError(
                f"{where}: {key} is {entry[key]!r} but its metrics.successes give {value}"
            )
    _check_rate(entry, sum(successes), len(successes), where)


def _check_rate(entry: Mapping[str, Any], wins: int, count: int, where: str) -> None:
    """A stated success rate is a percentage equal to the flags' rate; its interval holds it."""
    rate = entry.get("pc_success")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 100:
            raise EvalInfoError(f"{where}: pc_success is {rate!r}, not a percentage (0 to 100)")
        if count and abs(rate - 100 * wins / count) > _PC_TOLERANCE:
            raise EvalInfoError(
                f"{where}: pc_success is {rate!r} but its successes give "
                f"{100 * wins / count:g} ({wins}/{count})"
            )
    interval = entry.get("pc_success_ci95")
    if interval is None:
        return
    if (
        not isinstance(interval, list)
        or len(interval) != 2
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in interval)
        or not 0 <= interval[0] <= interval[1] <= 100
    ):
        raise EvalInfoError(
            f"{where}: pc_success_ci95 is {interval!r}, not an interval [low, high] within 0 to 100"
        )


def _check_total(overall: object, results: Sequence[TaskResult], path: Path) -> None:
    if not isinstance(overall, dict):
        return
    total = sum(r.n_episodes for r in results)
    if "n_episodes" in overall and overall["n_episodes"] != total:
        raise EvalInfoError(
            f"{path}: overall.n_episodes is {overall['n_episodes']!r} but per_task holds {total} "
            "episodes"
        )
    _check_rate(overall, sum(r.successes for r in results), total, f"{path}: overall")
