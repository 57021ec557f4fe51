"""``scripts/snapshot_digests.py``: re-stamping stored snapshots' digests and fingerprints.

Adding digests to snapshots stored without them is tested with the gate
(``tests/plugin/test_snapshot_gate.py``); here, what a change to what a digest reads needs.
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, TOY_CONFTEST

from pytest_benchmarks.metrics.snapshots import dumps

GATED = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_gate(evaluate, snapshot):
    assert evaluate() == snapshot
"""

#: An environment another run stored: kept, since it says where the outcomes were produced.
ELSEWHERE = {"packages": {"numpy": "0.9"}, "gpu": None, "container": None}


def _script() -> Callable[[list[str]], int]:
    import toybench  # noqa: F401  (registers "toy" in this process)

    return runpy.run_path(str(ROOT / "scripts" / "snapshot_digests.py"))["main"]


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(dumps(doc))


def test_a_restamp_rewrites_stale_digests_and_stamps_the_environment(pytester: pytest.Pytester):
    """Digests stored before a change to what they read are kept unless ``--restamp`` names
    their benchmark; then they are computed again, as a full run stores them. A snapshot with
    no fingerprint gets this environment's, the one the gate computes (the files come back byte
    for byte); a stored one is kept."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_gate=GATED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-episodes=4",
                                "--snapshot-update")  # fmt: skip
    result.assert_outcomes(passed=2)
    root = pytester.path / "__benchmark_snapshots__"
    stroll, walk = sorted(root.rglob("*.json"))
    stored = {p: p.read_text() for p in (stroll, walk)}

    def stale(doc: dict[str, Any]) -> None:
        del doc["fingerprint"]
        for episode in doc["episodes"]:
            episode["initial_digest"] = "0" * 12

    _edit(stroll, stale)
    _edit(walk, lambda doc: doc.update(fingerprint=ELSEWHERE))
    main = _script()
    assert main([str(root)]) == 0  # digests and sketches stored: nothing to reset
    assert {e["initial_digest"] for e in json.loads(stroll.read_text())["episodes"]} == {"0" * 12}
    assert main([str(root), "--restamp", "toy"]) == 0
    assert stroll.read_text() == stored[stroll]
    kept = json.loads(walk.read_text())
    assert kept["fingerprint"] == ELSEWHERE
    assert {**kept, "fingerprint": None} == {**json.loads(stored[walk]), "fingerprint": None}


def test_sketches_are_added_where_the_digests_still_match(pytester: pytest.Pytester):
    """A snapshot stored before sketches were kept gets them, as a run stores them: the file
    comes back byte for byte."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_gate=GATED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-episodes=3",
                                "--benchmark-task=walk", "--snapshot-update")  # fmt: skip
    result.assert_outcomes(passed=1)
    root = pytester.path / "__benchmark_snapshots__"
    (walk,) = root.rglob("*.json")
    stored = walk.read_text()
    assert all(len(e["initial_sketch"]) == 9 for e in json.loads(stored)["episodes"])
    _edit(walk, lambda doc: [e.pop("initial_sketch") for e in doc["episodes"]])
    assert "initial_sketch" not in walk.read_text()
    assert _script()([str(root)]) == 0
    assert walk.read_text() == stored


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: (d / "x.json").write_text('{"id": "a"'), "x.json: not a snapshot"),
        (lambda d: (d / "x.json").write_bytes(b"\x00\xff"), "x.json: not a snapshot"),
        (lambda d: (d / "x.json").write_text(json.dumps(SNAPSHOT_WITHOUT_ENV)), "no 'env'"),
        (lambda d: (d / "x.json").write_text(json.dumps({**SNAPSHOT_WITHOUT_ENV, "env": "nope"})),
         "unknown benchmark 'nope'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], make, said):  # type: ignore[no-untyped-def]
    make(tmp_path)
    assert _script()([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("snapshot_digests.py: error: ") and said in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_batch_size_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (committed,) = (ROOT / "benchmarks/__benchmark_snapshots__/test_pusht").rglob("*.json")
    (tmp_path / "pusht.json").write_text(committed.read_text())
    _edit(tmp_path / "pusht.json", lambda doc: doc["episodes"][0].pop("initial_sketch", None))
    assert _script()([str(tmp_path), "--batch-size", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "snapshot_digests.py: error: --benchmark-batch-size: '-1' is not an integer >= 0"
    )


#: A snapshot of one episode, its benchmark not said.
SNAPSHOT_WITHOUT_ENV = {
    "id": "toy/walk", "suite": "toy", "task": "walk", "successes": 1, "n_episodes": 1,
    "pc_success": 100.0, "policy": {}, "settings": {"seed": 0},
    "episodes": [{"index": 0, "seed": 0, "init_state": 0, "success": True, "steps": 3}],
}  # fmt: skip
