"""``pytest-benchmarks slurm`` on a real single-node Slurm cluster (munged, slurmctld and
slurmd started by the test, ``local_slurm``): an array of shards and a merge that equals the run
without shards, and an element killed mid-task that Slurm requeues and that carries its shard on
from its journal, running no finished episode again."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from held import ARGS, EPISODES, HOLD, NOTING_POLICY, held
from helpers import TOY_CONFTEST, XDIST_VARIABLES, outcomes, read_metrics

from pytest_benchmarks.cli import main
from pytest_benchmarks.cluster.local_slurm import cluster, start_again_soon, unavailable, wait_empty

pytestmark = pytest.mark.e2e

METAWORLD_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().n_episodes == 3
"""

TOY_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    evaluate()
"""


@pytest.fixture
def slurm(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[dict[str, str]]:  # fmt: skip
    why = unavailable()
    if why:
        pytest.skip(f"no Slurm cluster here: {why}")
    for name in XDIST_VARIABLES:  # the jobs inherit this environment: no xdist worker's
        monkeypatch.delenv(name, raising=False)
    with cluster(tmp_path_factory.mktemp("slurm")) as env:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield env


def submitted(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    """Submit through the CLI, in this process; the array's and the merge's job ids."""
    capsys.readouterr()
    assert main(["slurm", *argv]) == 0
    said = capsys.readouterr().out
    words = said.split()
    return words[words.index("array") + 2], words[words.index("merge") + 2]


def test_an_array_runs_each_shard_and_its_merge_equals_the_run_without_shards(
    pytester: pytest.Pytester, slurm: dict[str, str], capsys: pytest.CaptureFixture[str]
):
    """Three Meta-World tasks in two array elements: the merged metrics hold every task, with
    per-episode records equal to one session's with -n 0."""
    pytester.makepyfile(test_mw=METAWORLD_TESTS)
    args = ["-p", "no:cacheprovider", "--benchmark-task=reach-v3,push-v3,button-press-v3",
            "--benchmark-episodes=3"]  # fmt: skip
    out = pytester.path / "out"
    submitted(capsys, "--shards=2", f"--out={out}", "--", *args)
    wait_empty(slurm)
    merged = read_metrics(out / "metrics.json")
    assert merged["run"]["missing_shards"] == [] and merged["run"]["partial"] is False
    assert sorted(Path(p).name for p in merged["run"]["shards"]) == [
        "shard-1-of-2.json", "shard-2-of-2.json"
    ]  # fmt: skip
    pytester.runpytest(*args, "--benchmark-metrics=whole.json").assert_outcomes(passed=3)
    assert outcomes(merged) == outcomes(read_metrics(pytester.path / "whole.json"))
    assert "merged 2 files, 3 tasks" in (out / "logs" / "merge.out").read_text()


def _element(pid: int) -> str:
    """The array element a process runs in, from its environment."""
    env = dict(
        item.split("=", 1)
        for item in Path(f"/proc/{pid}/environ").read_text().split("\0")
        if "=" in item
    )
    return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"


def _gone(pid: int) -> None:
    """Until the process has ended (a zombie no one reaps counts: it runs nothing)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} outlived its element")


def test_a_requeued_element_carries_its_shard_on_and_reruns_no_finished_episode(
    pytester: pytest.Pytester, slurm: dict[str, str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):  # fmt: skip
    """The element running walk is requeued (``scontrol requeue``: Slurm kills it and starts it
    again, as when its node goes) while walk holds at its fourth episode: the restarted element
    resumes from its journal, so the three finished episodes are kept and not run again, and
    the merged run equals one session's with -n 0."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS, noting=NOTING_POLICY)
    monkeypatch.setenv("HOLD_AT", str(HOLD))
    out = pytester.path / "out"
    submitted(capsys, "--shards=2", f"--out={out}", "--", *ARGS)
    pid = held(pytester, None, limit_s=300)  # its element may wait for the node
    element = _element(pid)
    subprocess.run(["scontrol", "requeue", element], check=True)
    start_again_soon(element, slurm)
    _gone(pid)
    (pytester.path / "go").touch()
    wait_empty(slurm)
    merged = read_metrics(out / "metrics.json")
    assert merged["run"]["partial"] is False, (out / "logs" / "merge.out").read_text()
    walk = next(r for r in merged["results"] if r["id"] == "toy/walk")
    assert [e["index"] for e in sorted(walk["episodes"], key=lambda e: e["index"])] == list(
        range(EPISODES)
    )
    # HOLD starts before the requeue (3 finished, the held one cut short), then the 5 left.
    assert len((pytester.path / "started-walk.txt").read_text()) == HOLD + EPISODES - (HOLD - 1)
    monkeypatch.delenv("HOLD_AT")
    pytester.runpytest(*ARGS, "--benchmark-metrics=whole.json").assert_outcomes(passed=2)
    assert outcomes(merged) == outcomes(read_metrics(pytester.path / "whole.json"))
    log = (out / "logs" / f"shard-{element.split('_')[1]}.out").read_text()
    assert "CANCELLED" in log and "DUE TO JOB REQUEUE" in log, log


def test_a_cancelled_element_is_named_by_the_merge_and_the_same_command_carries_it_on(
    pytester: pytest.Pytester, slurm: dict[str, str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):  # fmt: skip
    """``scancel`` of the element running walk while walk holds at its fourth episode: Slurm
    does not start it again, so the merge names its shard unfinished; the same command again
    keeps the finished shard, carries walk on from its three finished episodes, and the merged
    run equals one session's with -n 0."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_toy=TOY_TESTS, noting=NOTING_POLICY)
    monkeypatch.setenv("HOLD_AT", str(HOLD))
    out = pytester.path / "out"
    argv = ["--shards=2", f"--out={out}", "--", *ARGS]
    submitted(capsys, *argv)
    pid = held(pytester, None, limit_s=300)  # its element may wait for the node
    element = _element(pid)
    subprocess.run(["scancel", element], check=True)
    _gone(pid)
    wait_empty(slurm)
    shard = element.split("_")[1]
    said = (out / "logs" / "merge.out").read_text()
    assert f"unfinished: {out / f'shard-{shard}-of-2.json'} (shard {shard}/2)" in said, said
    assert read_metrics(out / "metrics.json")["run"]["partial"] is True
    (pytester.path / "go").touch()
    submitted(capsys, *argv)
    wait_empty(slurm)
    merged = read_metrics(out / "metrics.json")
    assert merged["run"]["partial"] is False, (out / "logs" / "merge.out").read_text()
    # HOLD starts before the cancel (3 finished, the held one cut short), then the 5 left.
    assert len((pytester.path / "started-walk.txt").read_text()) == HOLD + EPISODES - (HOLD - 1)
    assert len((pytester.path / "started-stroll.txt").read_text()) == EPISODES  # kept whole
    monkeypatch.delenv("HOLD_AT")
    pytester.runpytest(*ARGS, "--benchmark-metrics=whole.json").assert_outcomes(passed=2)
    assert outcomes(merged) == outcomes(read_metrics(pytester.path / "whole.json"))
