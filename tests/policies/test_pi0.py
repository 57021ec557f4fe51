"""The pi0 family (pi0, pi0.5) through ``lerobot:DIR``, offline: built by LeRobot 0.6 with
random weights at a test's size (``lerobot_models.small_pi``: LeRobot's Gemma config code
answering a one-layer Gemma; the smallest real variant, 1.6 B parameters, is measured by
``benchmarks/perf/pi0_cpu.py``), saved with its processors, its PaliGemma-style tokenizer read
from a Hub cache made here. Step-for-step parity with ``lerobot_eval.rollout`` on LIBERO (two
cameras, state, language; actions and tokens equal) is in test_lerobot_parity. Here the
per-episode records do not depend on the batch size (flow-matching noise from each slot's own
RNG), on Meta-World: its dense rewards make every action count in a record, where LIBERO's
sparse ones would let a policy that acts differently at batch 2 keep equal records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks.api import evaluate

pytest.importorskip("lerobot.policies.pi0", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

SIZE = 64
#: LeRobot's Meta-World layout: one camera and the 4-D state.
INPUTS = {"observation.state": (4,), "observation.image": (3, SIZE, SIZE)}


def records(run: Any) -> list[tuple]:
    return [e.outcome() for r in run.results for e in r.episodes]


@pytest.mark.usefixtures("offline_pi_tokenizer")
@pytest.mark.parametrize("kind", lerobot_models.PI_KINDS)
def test_records_are_the_same_at_batch_1_and_2(kind: str, tmp_path: Path):
    with lerobot_models.small_pi(kind):
        folder = lerobot_models.checkpoint(kind, tmp_path / kind, INPUTS, action_dim=4)
        runs = [
            evaluate("metaworld", f"lerobot:{folder}", tasks=["reach-v3"], episodes=2,
                     max_steps=6, batch_size=batch, image_size=SIZE, device="cpu", sync=True)
            for batch in (1, 2)
        ]  # fmt: skip
    assert [r.error for run in runs for r in run.results] == [None, None]
    assert records(runs[0]) == records(runs[1])
    assert [rec[4] for rec in records(runs[0])] == [6, 6]
    # The two episodes' rewards differ: real, distinct trajectories were compared.
    assert len({rec[5] for rec in records(runs[0])}) == 2
    assert runs[0].results[0].policy["source"] == "lerobot"
