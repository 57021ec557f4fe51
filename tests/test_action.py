"""The repository's CI action (action.yml) on real Meta-World runs: its shell steps run as a
runner runs them (``action_steps``), over a run that regressed, one that did not and a file
that is not a run; in the end-to-end tier its install step installs the package from the
action's checkout into a fresh environment, which then gates the run.
(``tests/metrics/test_eval_info.py`` runs it over LeRobot's own ``eval_info.json``.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from action_steps import action, run_action
from lxml import html

from pytest_benchmarks.api import evaluate

REACH = {"tasks": ["reach-v3"], "episodes": 10, "max_steps": 60, "sync": True}
VENV_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("action")
    made = {name: folder / f"{name}.json" for name in ("expert", "again", "random")}
    evaluate("metaworld", "scripted", **REACH, metrics=made["expert"])
    evaluate("metaworld", "scripted", **REACH, metrics=made["again"])
    evaluate("metaworld", "random", **REACH, metrics=made["random"])
    return made


def test_a_regression_fails_the_job_after_its_summary_and_report_are_written(
    runs: dict[str, Path], tmp_path: Path
):
    ran = run_action({"run": str(runs["random"]), "baseline": str(runs["expert"]),
                      "install": "false"}, tmp_path, VENV_PATH)  # fmt: skip
    assert ran.statuses["gate"] == 0 and ran.outputs["gate"] == {"status": "1"}
    assert ran.statuses["Fail on a regression"] == 1
    assert "a task's success rate dropped significantly" in ran.logs["Fail on a regression"]
    (row,) = [line for line in ran.summary.splitlines() if line.startswith("| `metaworld/")]
    task, baseline, success, *_, verdict = [cell.strip() for cell in row.strip("|").split("|")]
    assert (task, success) == ("`metaworld/reach-v3`", "0/10 (0%, 0–28)")
    assert baseline.startswith(("9/10", "10/10")) and verdict.startswith("**regression** (McNemar")
    assert ran.summary.rstrip().splitlines()[-1].endswith("→ REGRESSION")
    # The report is uploaded whatever the verdict: the artifact names the page written.
    (upload,) = [w for uses, w in ran.uses if uses.startswith("actions/upload-artifact@")]
    assert upload["name"] == "pytest-benchmarks-report"
    page = html.fromstring((tmp_path / upload["path"]).read_bytes())
    assert page.xpath('//table[@id="tasks"]/tbody/tr')[0].get("class") == "regression"
    # Nothing is installed where the job has the package already.
    assert ran.statuses["Install pytest-benchmarks"] is None
    assert not any(uses.startswith("actions/setup-python@") for uses, _ in ran.uses)


def test_the_same_policy_passes_and_no_page_is_written_when_none_is_asked(
    runs: dict[str, Path], tmp_path: Path
):
    ran = run_action({"run": str(runs["again"]), "baseline": str(runs["expert"]),
                      "install": "false", "html": ""}, tmp_path, VENV_PATH)  # fmt: skip
    assert not ran.failed and ran.outputs["gate"] == {"status": "0"}
    assert "pytest-benchmarks: no regression" in ran.logs["Fail on a regression"]
    assert ran.summary.rstrip().splitlines()[-1].endswith("→ no regression")
    assert ran.statuses["Upload the HTML report"] is None
    assert not list(tmp_path.glob("*.html"))


def test_a_file_that_is_not_a_run_fails_the_job_naming_it(runs: dict[str, Path], tmp_path: Path):
    wrong = tmp_path / "notes.json"
    wrong.write_text('{"hello": 1}')
    ran = run_action({"run": str(wrong), "baseline": str(runs["expert"]), "install": "false"},
                     tmp_path, VENV_PATH)  # fmt: skip
    assert ran.outputs["gate"] == {"status": "2"}
    assert f"pytest-benchmarks: error: {wrong}: " in ran.logs["gate"]
    assert ran.statuses["Fail on a regression"] == 1
    assert "the gate could not judge the run (exit status 2" in ran.logs["Fail on a regression"]
    assert ran.summary.splitlines()[0] == "**pytest-benchmarks gate:** not judged (exit status 2):"
    assert f"pytest-benchmarks: error: {wrong}: " in ran.summary


def test_the_action_declares_what_its_steps_read():
    """Every input a step reads is declared, and every declared input is read by a step."""
    spec = action()
    text = (Path(__file__).parent.parent / "action.yml").read_text()
    steps = text.split("\nruns:", 1)[1]
    read = set(re.findall(r"inputs\.(\w+)", steps))
    assert read == set(spec["inputs"])
    assert spec["outputs"]["status"]["value"] == "${{ steps.gate.outputs.status }}"


@pytest.mark.e2e
def test_the_install_step_installs_the_package_from_the_action_checkout(
    runs: dict[str, Path], tmp_path: Path
):
    """A fresh virtual environment, as setup-python leaves a runner: the action's own install
    step puts pytest-benchmarks in it (from the package index), and the gate runs from it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    path = f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    ran = run_action({"run": str(runs["random"]), "baseline": str(runs["expert"])}, tmp_path, path)
    assert ran.statuses["Install pytest-benchmarks"] == 0, ran.logs["Install pytest-benchmarks"]
    assert (venv / "bin" / "pytest-benchmarks").exists()
    assert ran.outputs["gate"] == {"status": "1"}, ran.logs["gate"]
    assert ran.statuses["Fail on a regression"] == 1
