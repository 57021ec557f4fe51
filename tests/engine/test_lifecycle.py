"""A run opened and closed by ``engine.lifecycle.Run``, the way ``api.evaluate`` and the plugin
both take: outputs held from open to close, an earlier journal discarded only by a new run that
writes the file, a refused open leaving nothing locked, the journal gone only when complete."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import toybench  # noqa: F401  (registers the toy benchmark in this process)
from engine.test_run import run

from pytest_benchmarks.core import validation
from pytest_benchmarks.core.selection import select
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.engine.lifecycle import Run, resolved
from pytest_benchmarks.metrics import journal
from pytest_benchmarks.metrics.resume import ResumeError


def _open(settings: Settings, owner: bool = True) -> Run:
    return Run.open(settings, select(settings).tasks, owner=owner, metrics=owner, journaling=True)


def test_a_run_holds_its_outputs_from_open_to_close_and_a_refused_open_holds_none(tmp_path: Path):
    metrics = tmp_path / "m.json"
    settings = resolved(
        validation.build(
            root=tmp_path, env="toy", task="walk", episodes=2, sync=True, metrics=metrics
        ),
        workers=0,
    )
    assert settings.policy_server == "off"  # decided at open: one process, nothing to serve
    first = _open(settings)
    busy = f"--benchmark-metrics: {metrics} is in use by another session \\(PID {os.getpid()}\\)"
    with pytest.raises(validation.OptionError, match=busy):
        _open(settings)
    worker = _open(settings, owner=False)  # an xdist worker owns no output: never refused
    assert worker.locks == []
    result, _ = run(first.engine, "walk")
    assert result.n_episodes == 2
    folder = journal.folder_for(metrics)
    assert folder.is_dir()
    first.close(complete=False)  # cut short: the journal is what a resume carries on
    assert folder.is_dir()
    # A resumed run that the file refuses (no file, another seed in the journal) locks nothing.
    other = dataclasses.replace(settings, resume=True, seed=7)
    with pytest.raises(ResumeError, match="seed 1000, this run has 7"):
        _open(other)
    # A new run discards the earlier journal, and says what it held.
    again = _open(settings)
    assert again.journal_line is not None and "2 finished episodes" in again.journal_line
    assert not folder.exists()  # nothing but its own files was there: the folder goes too
    run(again.engine, "walk")
    again.close(complete=True)
    assert not folder.exists()
    _open(settings).close(complete=True)  # released: the next run opens


@pytest.mark.parametrize(
    ("given", "batched"),
    [
        ({"batch_size": 1}, False),
        ({"episodes": 1, "batch_size": 4}, False),
        ({"episode_indices": (3,), "batch_size": 4}, False),
        ({"debug": True}, False),
        ({"ray": "auto"}, False),  # one env per Ray task unless a batch size says more
        ({"batch_size": 2}, True),
        ({"batch_size": 1, "policy_server": "on"}, True),  # a server batches every worker's
    ],
)
def test_batched_inference_is_recorded_as_it_runs(given: dict, batched: bool):
    """A batch of one shares no forward pass: it acts as batch-of-one inference, and the run
    block, resume and the snapshot's settings say so."""
    settings = Settings(
        policy="lerobot:/ckpt", batched_inference=True, episodes=given.pop("episodes", 4), **given
    )
    assert resolved(settings, workers=0).batched_inference is batched
