"""LeRobot's other policy types that build offline (VQ-BeT, TD-MPC, the Gaussian actor that was
SAC's), random weights, saved with their processors: each runs through ``lerobot:DIR`` on
Meta-World (LeRobot's layout), with the same per-episode records at batch sizes 1 and 2 (TD-MPC
plans with sampled noise and the Gaussian actor samples its actions: each slot's own RNG keeps
them independent of the batch); and the manual's table of types is LeRobot's own list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks.api import evaluate

pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

SIZE = 48
#: LeRobot's Meta-World layout: TD-MPC reads its image only under ``observation.image``
#: (another name fails inside LeRobot's TD-MPC with a KeyError).
INPUTS = {"observation.state": (4,), "observation.image": (3, SIZE, SIZE)}
RUN = {"tasks": ["reach-v3"], "episodes": 2, "max_steps": 6, "obs": "lerobot",
       "image_size": SIZE, "device": "cpu", "sync": True}  # fmt: skip


def records(run: Any) -> list[tuple]:
    return [e.outcome() for r in run.results for e in r.episodes]


@pytest.mark.parametrize("kind", sorted(lerobot_models.OTHER_KINDS))
def test_runs_with_records_independent_of_the_batch_size(kind: str, tmp_path: Path):
    folder = lerobot_models.checkpoint(kind, tmp_path / kind, INPUTS, action_dim=4)
    runs = [evaluate("metaworld", f"lerobot:{folder}", batch_size=b, **RUN) for b in (1, 2)]
    assert [r.error for run in runs for r in run.results] == [None, None]
    assert records(runs[0]) == records(runs[1])
    # The two episodes differ: the comparison is of real trajectories.
    assert len({rec[5] for rec in records(runs[0])}) == 2
    assert runs[0].results[0].policy["source"] == "lerobot"


def test_the_manuals_table_has_a_row_for_every_type_lerobot_registers():
    import lerobot.policies  # noqa: F401  (registers every type's config)
    from lerobot.configs.policies import PreTrainedConfig

    text = (Path(__file__).resolve().parents[2] / "docs" / "policies.md").read_text()
    table = text.split("## LeRobot policy types", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([a-z0-9_, ]+) \|", table, re.MULTILINE)
    named = sorted(t.strip() for row in rows for t in row.split(",") if t.strip() != "type")
    assert named == sorted(PreTrainedConfig.get_known_choices())
