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
    assert main([str(root)]) == 0
    assert {e["initial_digest"] for e in json.loads(stroll.read_text())["episodes"]} == {"0" * 12}
    assert main([str(root), "--restamp", "toy"]) == 0
    assert stroll.read_text() == stored[stroll]
    kept = json.loads(walk.read_text())
    assert kept["fingerprint"] == ELSEWHERE
    assert {**kept, "fingerprint": None} == {**json.loads(stored[walk]), "fingerprint": None}
