"""The smoke jobs, run exactly as tox.ini runs them (the workflow and README say the same).

A smoke run is one episode per task: too few for the gate to judge a success rate, which its
summary says, but enough to check that every task's pipeline runs, its observations and actions
are valid, and its success signal is alive on an episode the scripted expert is known to solve
(the committed snapshots say which). Green when nothing is broken, by construction.
"""

from __future__ import annotations

import configparser
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_benchmarks.core import catalog

#: The smoke jobs and tox, run whole: the end-to-end tier.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "benchmarks" / "__benchmark_snapshots__"


def tox_commands(env: str, tmp: Path) -> list[list[str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini")
    lines = parser[f"testenv:{env}"]["commands"].strip().splitlines()
    return [
        shlex.split(line.replace("{envtmpdir}", str(tmp)).replace("{posargs}", ""))
        for line in lines
    ]


def option(command: list[str], name: str) -> str:
    return next(arg.split("=", 1)[1] for arg in command if arg.startswith(f"{name}="))


#: Tasks of each smoke run that this test runs (the option given last wins): the workflow's
#: smoke jobs run the whole selection; every one of its tasks is checked against the committed
#: snapshots below without running it.
HERE = {
    "metaworld": "--benchmark-task=MT10",
    "libero": "--benchmark-task=libero_spatial/0,libero_object/0",
    "aloha": "--benchmark-task=aloha",
    "pusht": "--benchmark-task=pusht",
}
#: Tasks each smoke job checks against the snapshots, and tasks this test runs.
GATED = {"metaworld": 50, "libero": 20, "aloha": 2, "pusht": 1}
RUN = {"metaworld": 10, "libero": 2, "aloha": 2, "pusht": 1}


@pytest.mark.parametrize("suite", list(HERE))
def test_smoke_job_is_green_and_says_what_it_cannot_judge(suite: str, tmp_path: Path):
    run, report = tox_commands(f"smoke-{suite}", tmp_path)
    # The workflow's smoke job runs the same selection.
    workflow = yaml.safe_load((ROOT / ".github/workflows/benchmark_tests.yml").read_text())
    matrix = workflow["jobs"]["smoke"]["strategy"]["matrix"]["include"]
    args = next(m["args"] for m in matrix if m["benchmark"] == suite).split()
    assert all(arg in run for arg in args), (args, run)
    # The chosen episode succeeded for every task in the committed snapshots.
    episode = int(option(run, "--benchmark-episode"))
    benchmark = catalog.get(suite)
    if benchmark.missing():
        pytest.skip(benchmark.missing())
    tokens = [arg for arg in run if arg.startswith("--benchmark-task=")]
    selected = (benchmark.select(option(run, "--benchmark-task").split(",")) if tokens
                else benchmark.default_selection())  # fmt: skip
    gated = [SNAPSHOTS / f"test_{suite}" / "test_no_regression" / f"{t.id}.json" for t in selected]
    gated = [path for path in gated if path.is_file()]  # tasks the expert cannot do have none
    assert len(gated) == GATED[suite], gated
    for snapshot in gated:
        stored = json.loads(snapshot.read_text())["episodes"]
        assert next(e["success"] for e in stored if e["index"] == episode), snapshot
    run = [*run, HERE[suite]]
    env = {**os.environ, "PYTEST_ADDOPTS": "-p no:cacheprovider"}
    done = subprocess.run(
        [sys.executable, "-m", *run], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert "could not fail: need >= " in done.stdout, done.stdout[-3000:]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    rows = metrics["results"]
    assert len(rows) == RUN[suite], [r["id"] for r in rows]
    assert all(r["error"] is None and r["successes"] == 1 for r in rows), rows
    for row in rows:
        snapshot = SNAPSHOTS / f"test_{suite}" / "test_no_regression" / f"{row['id']}.json"
        stored = json.loads(snapshot.read_text())["episodes"]
        assert next(e["success"] for e in stored if e["index"] == episode), row["id"]
    report_bin = Path(sys.executable).parent / report[0]
    done = subprocess.run([str(report_bin), *report[1:]], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report.md").read_text().count("1/1 (100%") == len(rows)


def test_tox_builds_its_env_on_python_3_12_and_runs_the_smoke_job(tmp_path: Path):
    """tox itself, not its commands read from tox.ini: ``basepython``, the extras, the torch
    constraint and the package as tox installs them, in the smallest env (PushT's smoke job).
    ``--discover`` hands tox this interpreter where ``python3.12`` is a pyenv shim."""
    work = tmp_path / "tox"
    command = [sys.executable, "-m", "tox", "--discover", sys.executable, "--workdir", str(work)]
    done = subprocess.run(
        [*command, "-e", "smoke-pusht"], cwd=ROOT, capture_output=True, text=True, timeout=1200
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "smoke-pusht: OK" in done.stdout
    metrics = json.loads((work / "smoke-pusht" / "tmp" / "metrics.json").read_text())
    assert metrics["run"]["python"].startswith("3.12")
    packages = metrics["run"]["packages"]
    # Its own env: PushT's extra is installed there, Meta-World's (in this one) is not.
    assert packages["gym-pusht"] and packages["metaworld"] is None, packages
