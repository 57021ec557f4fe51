"""``pytest-benchmarks drift`` on real Meta-World snapshots: each episode reset under the
installed environment (no policy), its digest held against the snapshot's; moved states
explained by a changed fingerprint or not; bad input in one line."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from helpers import ROOT

from pytest_benchmarks.cli import main

SNAPSHOTS = ROOT / "benchmarks/__benchmark_snapshots__/test_metaworld/test_no_regression/metaworld"


def drift(*args: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["drift", *map(str, args)])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def snapshots(tmp_path: Path) -> Path:
    """Two committed Meta-World snapshots cut to their first 4 episodes (the plan's prefix)."""
    for task in ("reach-v3", "door-open-v3"):
        doc = json.loads((SNAPSHOTS / f"{task}.json").read_text())
        doc["episodes"] = doc["episodes"][:4]
        doc["successes"] = sum(e["success"] for e in doc["episodes"])
        doc["n_episodes"] = 4
        doc["pc_success"] = 100.0 * doc["successes"] / 4
        (tmp_path / f"{task}.json").write_text(json.dumps(doc))
    return tmp_path


def edit(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_drift_holds_each_episodes_initial_state_against_its_snapshot(snapshots: Path):
    status, out, _ = drift(snapshots)
    assert status == 0, out
    assert "  metaworld/door-open-v3: 0 of 4 initial states moved" in out
    assert out.rstrip().endswith("drift: 0 of 2 tasks' initial states moved (0 of 8 episodes)")

    # A state that moved under the snapshot's own environment: a refusal to come (exit 1).
    # By how much: the stored sketch is 0.05 away in every direction.
    def moved(doc: dict) -> None:  # type: ignore[type-arg]
        episode = doc["episodes"][2]
        sketch = episode["initial_sketch"]
        episode.update(
            initial_digest="0" * 12, initial_sketch=sketch[:1] + [x + 0.05 for x in sketch[1:]]
        )

    edit(snapshots / "door-open-v3.json", moved)
    status, out, _ = drift(snapshots)
    assert status == 1
    assert (
        "metaworld/door-open-v3: 1 of 4 initial states moved (from episode 2; by 0.05); the "
        "environment is the snapshot's: the gate refuses it" in out
    )
    edit(snapshots / "door-open-v3.json", lambda d: d["episodes"][2].pop("initial_sketch"))
    status, out, _ = drift(snapshots)
    assert "(from episode 2; 1 by an amount the snapshot cannot say (no sketch))" in out
    # The snapshot says it ran under another MuJoCo: explained, judged unpaired (exit 0).
    edit(snapshots / "door-open-v3.json",
         lambda d: d["fingerprint"]["packages"].update(mujoco="3.1.0"))  # fmt: skip
    status, out, _ = drift(snapshots, "--env", "metaworld")
    assert status == 0
    assert "(no sketch)); mujoco 3.1.0 → " in out and "the gate judges it unpaired" in out
    assert "the environment differs from the snapshots' (mujoco 3.1.0 → " in out


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: d / "missing", "missing: not a directory of snapshots"),
        (lambda d: d, "no snapshot with episodes there"),
        (lambda d: (d / "x.json").write_bytes(b"\x00\xff") and d, "x.json: not a snapshot"),
        (lambda d: (d / "x.json").write_text('{"id": "a"') and d, "x.json: not a snapshot"),
    ],
)
def test_drift_refuses_bad_input_in_one_line(tmp_path: Path, make, said: str):  # type: ignore[no-untyped-def]
    status, out, err = drift(make(tmp_path))
    assert status == 2 and out == ""
    assert said in err and len(err.strip().splitlines()) == 1


def test_drift_names_an_unknown_benchmark_in_one_line(snapshots: Path):
    edit(snapshots / "reach-v3.json", lambda d: d.update(env="nope"))
    status, _, err = drift(snapshots)
    assert status == 2 and "nope" in err and len(err.strip().splitlines()) == 1
