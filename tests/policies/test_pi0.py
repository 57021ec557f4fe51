"""The pi0 family (pi0, pi0.5) through ``lerobot:DIR``, offline: built by LeRobot 0.6 with
random weights at a test's size (``lerobot_models.small_pi``: LeRobot's Gemma config code
answering a one-layer Gemma; the smallest real variant, 1.6 B parameters, is measured by
``benchmarks/perf/pi0_cpu.py``), saved with its processors, its PaliGemma-style tokenizer read
from a Hub cache made here. Step-for-step parity with ``lerobot_eval.rollout`` on LIBERO (two
cameras, state, language; actions and tokens equal) is in test_lerobot_parity. Here the
per-episode records do not depend on the batch size (flow-matching noise from each slot's own
RNG): on LIBERO, and on Meta-World, whose dense rewards make every action count in a record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks.api import evaluate

pytest.importorskip("lerobot.policies.pi0", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

SIZE = 64
INPUTS = {"observation.state": (8,), "observation.images.image": (3, SIZE, SIZE),
          "observation.images.image2": (3, SIZE, SIZE)}  # fmt: skip


def records(run: Any) -> list[tuple]:
    return [e.outcome() for r in run.results for e in r.episodes]


@pytest.mark.usefixtures("offline_pi_tokenizer")
@pytest.mark.parametrize("kind", lerobot_models.PI_KINDS)
def test_records_are_the_same_at_batch_1_and_2(kind: str, tmp_path: Path):
    mw_inputs = {"observation.state": (4,), "observation.image": (3, SIZE, SIZE)}
    with lerobot_models.small_pi(kind):
        libero = lerobot_models.checkpoint(kind, tmp_path / "libero", INPUTS, action_dim=7)
        metaworld = lerobot_models.checkpoint(kind, tmp_path / "mw", mw_inputs, action_dim=4)
        runs = {
            (env, batch): evaluate(env, f"lerobot:{folder}", tasks=[task], episodes=2,
                                   max_steps=6, batch_size=batch, device="cpu", sync=True)
            for env, folder, task in (("libero", libero, "libero_spatial/0"),
                                      ("metaworld", metaworld, "reach-v3"))
            for batch in (1, 2)
        }  # fmt: skip
    assert [r.error for run in runs.values() for r in run.results] == [None] * 4
    for env in ("libero", "metaworld"):
        assert records(runs[env, 1]) == records(runs[env, 2])
        assert [rec[4] for rec in records(runs[env, 1])] == [6, 6]
    # The two Meta-World episodes' rewards differ: real, distinct trajectories were compared.
    assert len({rec[5] for rec in records(runs["metaworld", 1])}) == 2
    assert runs["libero", 1].results[0].policy["source"] == "lerobot"
