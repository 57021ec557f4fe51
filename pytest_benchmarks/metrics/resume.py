"""``--benchmark-resume``: carry on an interrupted run from its metrics JSON.

Every finished task is already in the file (it is rewritten after each task, and on Ctrl-C or
SIGTERM with the running task's finished episodes). A resumed run keeps the tasks that finished
and runs, of the others, only the episodes the file lacks. An episode's outcome depends only on
the seed, the task and its index (the episode plan), so the resumed run's rows equal an
uninterrupted run's, episode for episode; the file must therefore have been made with the
settings an episode depends on, the same policy and the same selection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import OPTIONS, Settings
from pytest_benchmarks.metrics.document import load_results
from pytest_benchmarks.metrics.runs import InputError, load

#: What a run's episodes depend on, or which episodes and tasks it runs (the registry's
#: ``resume`` options): a resumed run's must equal the file's, where a file that predates a
#: setting had its default. (Batch size, workers, sync and devices change no outcome.)
SAME_SETTINGS = {o.field: o.dump(o.default) for o in OPTIONS if o.resume}


class ResumeError(ValueError):
    """A file this run cannot carry on; one line saying why."""


def load_resumable(path: Path, settings: Settings) -> dict[str, TaskResult]:
    """The results of ``path`` by task id, checked against this run's settings; empty when
    there is no file yet (a job interrupted before its first task finished)."""
    if not path.exists():
        return {}
    try:
        document = load(path)
    except InputError as exc:
        raise ResumeError(f"--benchmark-resume: {exc}") from None
    earlier: dict[str, Any] = document["run"]
    now = settings.as_dict()
    for key, default in SAME_SETTINGS.items():
        if earlier.get(key, default) != now.get(key):
            raise ResumeError(
                f"--benchmark-resume: {path} was made with {key} {_show(earlier.get(key))}, "
                f"this run has {_show(now.get(key))}; resume with the same settings, or run "
                "without --benchmark-resume"
            )
    return {result.task.id: result for result in load_results(document)}


def _show(value: Any) -> str:
    return "none" if value is None else repr(value)


def finished(results: Iterable[TaskResult]) -> dict[str, TaskResult]:
    """The tasks that need no more episodes: every planned one ran, and none failed."""
    return {r.task.id: r for r in results if r.error is None and not r.partial}


def plan_task(
    kept: TaskResult | None, indices: Sequence[int]
) -> tuple[TaskResult | None, list[int]]:
    """What a task still runs: the kept result to carry on (None: start afresh) and the episode
    indices of ``indices`` it lacks. A task that has every episode but failed after them runs
    again whole."""
    done = {e.index for e in kept.episodes} if kept is not None else set()
    missing = [i for i in indices if i not in done]
    if kept is not None and not missing:
        return None, list(indices)
    return kept, missing


def carry_on(kept: TaskResult | None, new: TaskResult, planned: int) -> TaskResult:
    """``new``'s episodes after ``kept``'s: one row for the whole plan, ``new``'s error (None
    once every episode ran), both runs' evaluation time."""
    if kept is None:
        return new
    if kept.policy and new.policy and kept.policy != new.policy:
        return replace(
            new,
            planned=planned,
            error=(
                f"ResumeError: the kept episodes were run by policy {kept.policy}, this run's "
                f"is {new.policy}; run without --benchmark-resume"
            ),
        )
    episodes = sorted([*kept.episodes, *new.episodes], key=lambda e: e.index)
    return replace(new, episodes=episodes, eval_s=kept.eval_s + new.eval_s, planned=planned)
