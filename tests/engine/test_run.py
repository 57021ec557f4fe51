"""The run engine on its own, without pytest: a task run to its row, the writer told however it
ends, and a resumed file's episodes kept while only the missing ones run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import toybench  # noqa: F401  (registers the toy benchmark in this process)

from pytest_benchmarks.core import validation
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.selection import select
from pytest_benchmarks.engine.run import RunEngine
from pytest_benchmarks.metrics import run_info
from pytest_benchmarks.metrics.document import build_metrics, write_metrics
from pytest_benchmarks.policies import make_policy


def run(engine: RunEngine, task_name: str) -> tuple[TaskResult, list[TaskResult]]:
    written: list[TaskResult] = []
    task = next(t for t in engine.tasks() if t.name == task_name)
    env = engine.env(task)
    processors = env.benchmark.processors(env.config)
    policy = make_policy(engine.settings.policy, env.benchmark, env.config, env.num_envs)
    try:
        return engine.run_task(env, policy, processors, written.append), written
    finally:
        env.close()


def test_a_task_runs_to_its_row_and_the_writer_gets_it(tmp_path: Path):
    settings = validation.build(
        root=tmp_path, env="toy", task="walk,stroll", episodes=5, batch_size=2, sync=True
    )
    engine = RunEngine.start(settings, select(settings).tasks)
    assert [t.name for t in engine.tasks()] == ["walk", "stroll"]
    assert engine.batch_size == 2 and engine.resumed == {} and engine.kept == {}
    result, written = run(engine, "walk")
    assert [e.index for e in result.episodes] == [0, 1, 2, 3, 4]
    assert [e.seed for e in result.episodes] == [1000, 1001, 1002, 1003, 1004]
    assert written == [result] and result.error is None and result.planned == 5


def test_a_resumed_task_runs_only_its_missing_episodes(tmp_path: Path):
    metrics = tmp_path / "m.json"
    whole = validation.build(root=tmp_path, env="toy", task="walk,stroll", episodes=4,
                             sync=True, metrics=metrics)  # fmt: skip
    engine = RunEngine.start(whole, select(whole).tasks)
    walk, _ = run(engine, "walk")
    stroll, _ = run(engine, "stroll")
    # The file of a run cut after two of stroll's episodes.
    cut = dataclasses.replace(stroll, episodes=stroll.episodes[:2], error="KeyboardInterrupt")
    block = run_info.run_block(run_info.static_info([], tmp_path, whole), whole, 0, 0.0, True, None)
    write_metrics(metrics, build_metrics([walk, cut], block, "scripted"))

    resumed = dataclasses.replace(whole, resume=True)
    engine = RunEngine.start(resumed, select(resumed).tasks)
    assert list(engine.kept) == ["toy/walk"]
    assert engine.missing(engine.tasks()[1]) == [2, 3]
    again, written = run(engine, "stroll")
    assert [e.index for e in again.episodes] == [0, 1, 2, 3]
    assert again.episodes[:2] == cut.episodes and again.error is None
    assert [(e.seed, e.success) for e in again.episodes] == [
        (e.seed, e.success) for e in stroll.episodes
    ]
    assert written[-1].episodes == again.episodes
    # Another seed is another run: the file is refused in one line.
    other = dataclasses.replace(resumed, seed=7)
    with pytest.raises(ValueError, match="was made with seed 1000, this run has 7"):
        RunEngine.start(other, select(other).tasks)
