"""``scripts/train_smoke/run.sh`` (the tox env and the workflow job of the same name) runs end to
end, at small sizes: recorded datasets that LeRobot loads, checkpoints that ``lerobot-train``
wrote from them, and both evaluated through ``--benchmark-policy=lerobot:``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lerobot.scripts.lerobot_train", reason="LeRobot is not installed")

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"DEMOS": "3", "PIXEL_DEMOS": "1", "STEPS": "20", "PIXEL_STEPS": "2", "EVAL": "2",
         "MAX_STEPS": "60", "GATE": "off"}  # fmt: skip


@pytest.mark.e2e
@pytest.mark.long
def test_record_train_evaluate_loop(tmp_path: Path):
    out = tmp_path / "smoke"
    env = {**os.environ, **SMALL, "OUT": str(out), "PYTHON": sys.executable}
    done = subprocess.run(["bash", "scripts/train_smoke/run.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    for name, key in (("demos", "observation.environment_state"),
                      ("demos-64", "observation.images.corner2")):  # fmt: skip
        dataset = LeRobotDataset(f"local/{name}", root=out / name)
        recorded = json.loads((out / f"{name}.json").read_text())
        episodes = recorded["results"][0]["episodes"]
        # Only the successful episodes became demonstrations.
        assert dataset.num_episodes == sum(e["success"] for e in episodes) > 0
        assert key in dataset.features
        checkpoint = out / f"train-{name}" / "checkpoints" / "last" / "pretrained_model"
        config = json.loads((checkpoint / "config.json").read_text())
        assert config["type"] == "act" and key in config["input_features"]
        evaluated = json.loads((out / f"eval-{name}.json").read_text())
        row = evaluated["results"][0]
        assert evaluated["policy"]["source"] == "lerobot" and row["error"] is None
        assert row["n_episodes"] == (2 if name == "demos" else 1)
        # Held-out goals: another base seed than the recording's.
        assert row["episodes"][0]["seed"] == 5000 != episodes[0]["seed"]
    assert "train-smoke: datasets, checkpoints and metrics in" in done.stdout


def test_bad_output_directory_is_refused(tmp_path: Path):
    env = {**os.environ, "OUT": "/", "PYTHON": sys.executable}
    done = subprocess.run(["bash", "scripts/train_smoke/run.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == "train-smoke: OUT=/ would be deleted; give a directory of its own"
