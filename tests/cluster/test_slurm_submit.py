"""``pytest-benchmarks slurm`` without a cluster: the batch scripts it writes, run here by bash
as Slurm would run them, and its refusals, one line each before anything is submitted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TOY_CONFTEST, read_metrics

from pytest_benchmarks.cli import main
from pytest_benchmarks.metrics.runs import EXIT_INPUT

TOY_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    evaluate()
"""


def test_the_scripts_run_each_shard_and_merge_what_exists(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
):
    """The element script, run by bash with the variable Slurm sets, runs its shard into
    OUT/shard-I-of-N.json; the merge script merges the shards that exist and names the
    missing one."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    out = pytester.path / "out"
    args = ["-p", "no:cacheprovider", "--benchmark-task=walk,stroll", "--benchmark-episodes=3"]
    assert main(["slurm", "--shards=2", f"--out={out}", "--dry-run", "--", *args]) == 0
    assert "#SBATCH --array=1-2" in capsys.readouterr().out
    element = subprocess.run(
        ["bash", str(out / "shards.sbatch")], env={**os.environ, "SLURM_ARRAY_TASK_ID": "1"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert element.returncode == 0, element.stdout + element.stderr
    shard = read_metrics(out / "shard-1-of-2.json")
    assert shard["run"]["shard"] == [1, 2] and len(shard["results"]) == 1
    merged = subprocess.run(["bash", str(out / "merge.sbatch")], capture_output=True, text=True)
    assert merged.returncode == 0, merged.stderr
    assert "missing: shard 2/2; the merged run is partial" in merged.stdout
    assert read_metrics(out / "metrics.json")["run"]["missing_shards"] == ["2/2"]


def test_an_element_whose_session_dies_is_started_again_from_its_journal(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
):
    """A session killed in its shard (SIGKILL from within the task) is started again by its
    element's script, which carries the shard on with --benchmark-resume; --retries bounds
    how often, and the element ends with the last session's status."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    out = pytester.path / "out"
    args = ["-p", "no:cacheprovider", "--benchmark-task=killed", "--benchmark-episodes=2"]
    assert main(["slurm", "--shards=1", f"--out={out}", "--retries=1", "--dry-run", "--",
                 *args]) == 0  # fmt: skip
    element = subprocess.run(
        ["bash", str(out / "shards.sbatch")], env={**os.environ, "SLURM_ARRAY_TASK_ID": "1"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert element.returncode == 137, element.stderr  # killed twice: no third start
    assert element.stderr.count("pytest ended with status 137") == 2, element.stderr
    assert "carrying it on from its journal" in element.stderr


def test_an_out_holding_another_runs_shards_is_refused_in_one_line(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
):
    """Each element resumes its shard file and the merge takes what it finds, so a run into
    an OUT that holds shards of other pytest arguments or another count would give the old
    shards as its result: refused, naming OUT and what differs; the same command carries on."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS)
    out = pytester.path / "out"
    args = ["-p", "no:cacheprovider", "--benchmark-task=walk,stroll", "--benchmark-episodes=2"]
    assert main(["slurm", "--shards=2", f"--out={out}", "--dry-run", "--", *args]) == 0
    element = subprocess.run(
        ["bash", str(out / "shards.sbatch")], env={**os.environ, "SLURM_ARRAY_TASK_ID": "1"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert element.returncode == 0, element.stdout + element.stderr
    capsys.readouterr()
    other = [*args[:-1], "--benchmark-episodes=5"]
    assert main(["slurm", "--shards=2", f"--out={out}", "--dry-run", "--", *other]) == EXIT_INPUT
    assert capsys.readouterr().err == (
        f"pytest-benchmarks: error: --out {out}: holds the shards of a run with other pytest "
        "arguments (-p no:cacheprovider --benchmark-task=walk,stroll --benchmark-episodes=2 → "
        "-p no:cacheprovider --benchmark-task=walk,stroll --benchmark-episodes=5); give another "
        "--out, or remove its shard-* files to start over\n"
    )
    assert main(["slurm", "--shards=3", f"--out={out}", "--dry-run", "--", *args]) == EXIT_INPUT
    assert capsys.readouterr().err == (
        f"pytest-benchmarks: error: --out {out}: holds the shards of a run with other --shards "
        "(shard-1-of-2.json); this one has 3: give another --out, or remove that run's shard-* "
        "files\n"
    )
    assert "--benchmark-episodes=2" in (out / "shards.sbatch").read_text()  # left as it was
    assert main(["slurm", "--shards=2", f"--out={out}", "--dry-run", "--", *args]) == 0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--shards=0"], "--shards: 0 is not a count of shards; give 1 or more"),
        (["--shards=100000000000", "--dry-run"], "--shards: 100000000000 is more than a Slurm "
         "array holds by default (MaxArraySize 1001: indices up to 1000); give 1000 or fewer"),
        (["--shards=2", "--sbatch-arg=--partition=a\n#SBATCH --x"], "--sbatch-arg: "
         "'--partition=a\\n#SBATCH --x' holds a line break; give one option per flag"),
        (["--shards=2", "--retries=-1"], "--retries: -1 is negative; give 0 or more"),
        (["--shards=2", "--", "--benchmark-shard=1/2"], "--benchmark-shard=1/2: each array "
         "element sets --benchmark-shard, --benchmark-metrics, --benchmark-resume itself"),
        (["--shards=2", "--", "--benchmark-metrics", "m.json"], "--benchmark-metrics: each"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_anything_is_submitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
):
    out = tmp_path / "out"
    assert main(["slurm", f"--out={out}", *argv]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"pytest-benchmarks: error: {says}") and err.count("\n") == 1, err
    assert not out.exists()


def test_without_sbatch_it_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm client commands here
    assert main(["slurm", "--shards=2", f"--out={tmp_path / 'out'}", "--", "-x"]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err == (
        "pytest-benchmarks: error: sbatch not found on PATH: Slurm's client commands are needed "
        "to submit (Debian: apt install slurm-client); --dry-run writes the batch scripts "
        "without them\n"
    )


def test_a_refused_submission_names_the_script_and_slurms_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """An sbatch that refuses (no such partition, no cluster reachable) is said in one line
    with Slurm's own last line; no merge job is submitted after it."""
    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('sbatch: error: Batch job submission "
                    "failed: Invalid partition name specified', file=sys.stderr)\nsys.exit(1)\n")  # fmt: skip
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    out = tmp_path / "out"
    assert main(["slurm", "--shards=2", f"--out={out}", "--sbatch-arg=--partition=gpu"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"pytest-benchmarks: error: sbatch refused {out / 'shards.sbatch'}: sbatch: error: "
        "Batch job submission failed: Invalid partition name specified\n"
    )
    assert "#SBATCH --partition=gpu" in (out / "merge.sbatch").read_text()
