"""``--benchmark-resume``: carry on an interrupted run from its metrics JSON and its journal.

Every finished task is already in the file (it is rewritten after each task, and on Ctrl-C or
SIGTERM with the running task's finished episodes), and every finished episode is in the run's
journal (``metrics.journal``), also where the run was killed before it could write the file.
A resumed run keeps the tasks that finished and runs, of the others, only the episodes both
lack. An episode's outcome depends only on
the seed, the task and its index (the episode plan), so the resumed run's rows equal an
uninterrupted run's, episode for episode; the file must therefore have been made with the
settings an episode depends on, the same policy and the same selection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog, comparability
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import SelectionError, TaskRef
from pytest_benchmarks.metrics import journal, run_info
from pytest_benchmarks.metrics.document import load_results
from pytest_benchmarks.metrics.gate.refusals import environment_changes
from pytest_benchmarks.metrics.runs import InputError, load


class ResumeError(ValueError):
    """A file this run cannot carry on; one line saying why."""


def load_resumable(
    path: Path, settings: Settings, notes: list[str] | None = None
) -> dict[str, TaskResult]:
    """The results of ``path`` and its journal by task id, checked against this run's
    settings; empty when neither exists (a job killed before its first episode ended).
    ``notes`` receives the journal's lines about what it dropped, and a warning for each file
    made in another environment (``environment_notes``)."""
    results: dict[str, TaskResult] = {}
    made: list[tuple[Path, dict[str, Any]]] = []
    if path.exists():
        try:
            document = load(path)
        except InputError as exc:
            raise ResumeError(f"--benchmark-resume: {exc}") from None
        results = {result.task.id: result for result in load_results(document)}
        _check_settings(path, document["run"], settings, [r.task for r in results.values()])
        _check_rows(path, document)
        made.append((path, document["run"]))
    folder = journal.folder_for(path)
    try:
        found = journal.read(folder)
    except journal.JournalError as exc:
        raise ResumeError(f"--benchmark-resume: journal {exc}") from None
    for file, run in found.runs.items():
        _check_settings(file, run, settings, [r.task for r in found.results.values()])
    said = environment_notes([*made, *found.runs.items()], settings)
    for task_id, logged in found.results.items():
        results[task_id] = _merge(results.get(task_id), logged)
    for result in results.values():
        _check_plan(path, result, settings)
    if notes is not None:
        notes.extend([*found.notes, *said])
    return results


def environment_notes(runs: Iterable[tuple[Path, dict[str, Any]]], settings: Settings) -> list[str]:
    """A warning for each file whose run was made in another environment than this one
    (``gate.environment_changes``: ``mujoco 3.3.0 → 3.4.0``): carried on, its kept episodes
    and the new ones ran under different simulators, which no later comparison can tell
    apart. Not refused: the same fingerprint is no setting, and the user may mean it."""
    now = run_info.run_fingerprint(settings)
    said = []
    for source, run in runs:
        changes = environment_changes(run.get("fingerprint") or {}, now)
        if changes:
            said.append(
                f"resume: warning: {source} was made in another environment "
                f"({', '.join(changes)}); its episodes are kept and the rest run in this one"
            )
    return said


def _check_settings(
    source: Path, earlier: dict[str, Any], settings: Settings, tasks: Iterable[TaskRef]
) -> None:
    """Refuse a file made with other settings (``comparability.RESUMED``), naming the first;
    the benchmark's own value of a setting is no difference from that value named
    (``comparability.effective``, over the file's ``tasks``)."""
    earlier, now = comparability.effective(earlier, settings.as_dict(), tasks)
    found = comparability.differences(earlier, now, options=comparability.RESUMED)
    if found:
        d = found[0]
        raise ResumeError(
            f"--benchmark-resume: {source} was made with {d.option.field} "
            f"{comparability.show(d.old)}, this run has {comparability.show(d.new)}; resume "
            "with the same settings, or run without --benchmark-resume"
        )


def _check_rows(path: Path, document: dict[str, Any]) -> None:
    """Each row's counts are its episodes', and each episode matches its checksum."""
    for row in document["results"]:
        episodes = row["episodes"]
        wins = sum(e["success"] for e in episodes)
        if (row["successes"], row["n_episodes"]) != (wins, len(episodes)):
            raise ResumeError(
                f"--benchmark-resume: {path}: {row['id']} says {row['successes']}/"
                f"{row['n_episodes']} but its episodes give {wins}/{len(episodes)} (edited?)"
            )
        for raw in episodes:
            episode = EpisodeRecord(**{k: v for k, v in raw.items() if k != "sum"})
            if "sum" in raw and raw["sum"] != episode.checksum():
                raise ResumeError(
                    f"--benchmark-resume: {path}: {row['id']} episode {raw['index']} does not "
                    "match its checksum (edited or damaged)"
                )


def _check_plan(path: Path, result: TaskResult, settings: Settings) -> None:
    """The kept episodes are this run's plan's: each index once and in the plan, with the seed
    and initial state the plan gives it."""
    task, planned = result.task.id, set(settings.indices)
    where = f"--benchmark-resume: {path}: {task}"
    seen: set[int] = set()
    for episode in result.episodes:
        if episode.index in seen:
            raise ResumeError(f"{where} holds episode {episode.index} twice")
        if episode.index not in planned:
            raise ResumeError(
                f"{where} holds episode {episode.index}, which this run's plan "
                f"({len(planned)} episodes) does not"
            )
        seen.add(episode.index)
    try:
        benchmark = catalog.get(result.task.env)
    except SelectionError:
        return  # not installed here: not in this run's selection either
    specs = plan_episodes(benchmark, result.task, settings.seed, [e.index for e in result.episodes])
    for episode, spec in zip(result.episodes, specs, strict=True):
        if (episode.seed, episode.init_state) != (spec.seed, spec.init_state):
            raise ResumeError(
                f"{where} episode {episode.index} ran seed {episode.seed}, initial state "
                f"{episode.init_state}; the plan gives seed {spec.seed}, initial state "
                f"{spec.init_state} (edited, or made by another plan)"
            )


def _merge(row: TaskResult | None, logged: TaskResult) -> TaskResult:
    """A task's row from the metrics JSON and from the journal (written first, so at least as
    recent): the journal's, with any episode only the file holds."""
    if row is None:
        return logged
    have = {e.index for e in logged.episodes}
    extra = [e for e in row.episodes if e.index not in have]
    if not extra:
        return logged
    return replace(logged, episodes=sorted([*logged.episodes, *extra], key=lambda e: e.index))


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


def same_policy(kept: TaskResult, identity: dict[str, str | None]) -> None:
    """Refuse, before any episode runs, a policy other than the one that ran the kept
    episodes (a checkpoint retrained in place: same spec, another revision)."""
    if kept.policy and identity and kept.policy != identity:
        raise ResumeError(
            f"the kept episodes were run by policy {kept.policy}, this run's is {identity}; "
            "run without --benchmark-resume"
        )


def carry_on(kept: TaskResult | None, new: TaskResult, planned: int) -> TaskResult:
    """``new``'s episodes after ``kept``'s: one row for the whole plan, ``new``'s error (None
    once every episode ran), both runs' evaluation time. A run refused for its policy
    (``same_policy``) ran no episode: the row is the kept one, with the refusal."""
    if kept is None:
        return new
    if kept.policy and new.policy and kept.policy != new.policy:
        return replace(kept, error=new.error, planned=planned)
    episodes = sorted([*kept.episodes, *new.episodes], key=lambda e: e.index)
    return replace(new, episodes=episodes, eval_s=kept.eval_s + new.eval_s, planned=planned)
