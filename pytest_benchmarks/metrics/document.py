"""The metrics JSON: building it from TaskResults, writing it atomically, loading and validating.

Besides this project's own keys (``run``, ``policy``, ``results``) it carries the keys LeRobot's
``eval_info.json`` uses (``per_task``, ``per_group``, ``overall``), with the success counts and
95% Wilson intervals LeRobot writes at every level (``n_episodes``, ``pc_success``,
``n_success``, ``pc_success_ci95``, in percent), so LeRobot's tooling and existing dashboards
read it unchanged. The JSON Schema ships in the package (``metrics/schema/metrics.schema.json``);
it still accepts version 1 files, which lack LeRobot's counts.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.policy import BACKBONE
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult, mean, wilson_interval

SCHEMA_VERSION = 2


def _counts(episodes: list[EpisodeRecord]) -> dict[str, Any]:
    """Episodes, successes and the success rate with its 95% Wilson interval, in percent, under
    LeRobot's ``eval_info.json`` names."""
    successes = sum(e.success for e in episodes)
    n = len(episodes)
    return {
        "n_episodes": n,
        "pc_success": 100.0 * successes / n if n else None,
        "n_success": successes,
        "pc_success_ci95": list(wilson_interval(successes, n)),
    }


def _aggregate(episodes: list[EpisodeRecord]) -> dict[str, Any]:
    counts = _counts(episodes)
    return {
        "avg_sum_reward": mean([e.sum_reward for e in episodes]),
        "avg_max_reward": mean([e.max_reward for e in episodes]),
        **counts,
        "successes": counts["n_success"],
        "ci95": counts["pc_success_ci95"],
        "video_paths": [e.video for e in episodes if e.video],
    }


def _policy_summary(spec: str, results: list[TaskResult]) -> dict[str, Any]:
    """The run's policy: fields shared by every task, None where tasks differ."""
    summary: dict[str, Any] = {"spec": spec}
    optional = [BACKBONE] if any(BACKBONE in r.policy for r in results) else []
    for key in ("source", "id", "revision", *optional):
        values = {r.policy.get(key) for r in results if r.policy}
        summary[key] = values.pop() if len(values) == 1 else None
    return summary


def build_metrics(
    results: Iterable[TaskResult], run: Mapping[str, Any], policy_spec: str
) -> dict[str, Any]:
    """The whole metrics document for a run, tasks sorted by id."""
    ordered = sorted(results, key=lambda r: r.task.id)
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for result in ordered:
        groups[result.task.suite].extend(result.episodes)
    everything = [e for r in ordered for e in r.episodes]
    eval_s = sum(r.eval_s for r in ordered)
    overall = _aggregate(everything)
    overall.update(
        {
            "eval_s": eval_s,
            "eval_ep_s": eval_s / len(everything) if everything else None,
            "n_tasks": len(ordered),
            "n_errors": sum(r.error is not None for r in ordered),
        }
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "run": dict(run),
        "policy": _policy_summary(policy_spec, ordered),
        "results": [r.to_row() for r in ordered],
        "per_task": [
            {
                "task_group": r.task.suite,
                "task_id": r.task.task_id,
                "task": r.task.task,
                **_counts(r.episodes),
                "metrics": {
                    "sum_rewards": [e.sum_reward for e in r.episodes],
                    "max_rewards": [e.max_reward for e in r.episodes],
                    "successes": [e.success for e in r.episodes],
                    "video_paths": [e.video for e in r.episodes if e.video],
                },
            }
            for r in ordered
        ],
        "per_group": {name: _aggregate(eps) for name, eps in groups.items()},
        "overall": overall,
    }


def write_metrics(path: Path, document: Mapping[str, Any]) -> None:
    """Write the metrics JSON atomically (strict JSON: no NaN or infinity)."""
    write_atomic(path, json.dumps(document, indent=2, allow_nan=False) + "\n")


def schema() -> dict[str, Any]:
    """The metrics JSON Schema shipped with the package."""
    text = (
        resources.files("pytest_benchmarks.metrics")
        .joinpath("schema/metrics.schema.json")
        .read_text()
    )
    document: dict[str, Any] = json.loads(text)
    return document


def load_results(document: Mapping[str, Any]) -> list[TaskResult]:
    """TaskResults back from a metrics document."""
    return [TaskResult.from_row(row) for row in document["results"]]
