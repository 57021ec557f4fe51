"""The examples of the README and the manual (docs/), run as written: their code blocks, and
their commands with a smaller selection appended (the option given last wins)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from checkpoints import train_tiny_policy
from helpers import XDIST_VARIABLES, docs_text, outcomes, read_metrics
from test_smoke import tox_commands

ROOT = Path(__file__).resolve().parents[1]


def readme_example(name: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", docs_text(), re.S)
    return next(block for block in blocks if f"def {name}(" in block)


def test_the_readme_check_passes_the_expert_and_fails_a_collapsed_policy(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_own=readme_example("test_mostly_succeeds"))
    args = ["-p", "no:cacheprovider", "--benchmark-task=reach-v3", "--benchmark-episodes=3"]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    collapsed = pytester.runpytest_subprocess(*args, "--benchmark-policy=noop")
    collapsed.assert_outcomes(failed=1)
    collapsed.stdout.fnmatch_lines(["*AssertionError: metaworld/reach-v3: 0/3*"])


def test_the_readme_policy_runs_and_acts_the_same_at_any_batch_size(pytester: pytest.Pytester):
    pytester.makepyfile(my_policies=readme_example("make"))
    pytester.makepyfile(
        test_run="""
import pytest

@pytest.mark.benchmark_env("metaworld")
def test_runs(evaluate):
    assert evaluate().error is None
"""
    )
    args = ["-p", "no:cacheprovider", "--benchmark-task=reach-v3", "--benchmark-episodes=3",
            "--benchmark-policy=module:my_policies:make"]  # fmt: skip
    runs = {}
    for batch in ("1", "3"):
        metrics = pytester.path / f"b{batch}.json"
        done = pytester.runpytest_subprocess(
            *args, f"--benchmark-batch-size={batch}", f"--benchmark-metrics={metrics}"
        )
        done.assert_outcomes(passed=1)
        (row,) = read_metrics(metrics)["results"]
        assert row["policy"] == {"source": "module", "id": "my_policies:make", "revision": "1"}
        assert row["batch_size"] == int(batch)
        runs[batch] = outcomes(read_metrics(metrics))
    assert runs["1"] == runs["3"]
    # The random actions differ between episodes: their reward sums do.
    assert len({episode for episode in runs["1"]["metaworld/reach-v3"]}) == 3


def readme_commands(start: str) -> list[list[str]]:
    """Every command of the README's shell blocks that starts with ``start`` (continuation
    lines joined, ``&&`` chains split), as arguments, each once (the manual's home page repeats
    the README's quick start)."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", docs_text(), re.S | re.M)
    commands = []
    for language, block in blocks:
        if language not in ("", "bash"):
            continue
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                command = shlex.split(part.strip()) if part.strip().startswith(start) else None
                if command and command not in commands:
                    commands.append(command)
    return commands


def run_pytest(command: list[str], *more: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A README ``pytest`` command, in this interpreter, from the repository root."""
    assert command[0].endswith("pytest"), command
    clean = {k: v for k, v in os.environ.items() if k not in XDIST_VARIABLES}
    clean["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    return subprocess.run(
        [sys.executable, "-m", "pytest", *command[1:], *more],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


def test_the_readme_metaworld_commands_run(tmp_path: Path):
    (main,) = readme_commands(".venv/bin/pytest benchmarks")
    (example,) = readme_commands("$ pytest benchmarks --benchmark-env=metaworld")
    # The example output's command is the main one with a task group and an episode count.
    assert [
        t for t in example[2:] if not t.startswith(("--benchmark-task=", "--benchmark-epis"))
    ] == main[1:]
    metrics = tmp_path / "run.json"
    done = run_pytest(main, "--benchmark-task=reach-v3", "--benchmark-episodes=2",
                      f"--benchmark-metrics={metrics}")  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(
        r"^benchmarks: metaworld: 1 tasks; episodes 2, seed 1000, policy scripted, "
        r"batch size auto$", done.stdout, re.M,
    ), done.stdout[:2000]  # fmt: skip
    assert f"metrics: {metrics}" in done.stdout
    (row,) = read_metrics(metrics)["results"]
    assert row["id"] == "metaworld/reach-v3" and row["successes"] == 2


@pytest.mark.e2e
def test_the_readme_libero_commands_run(tmp_path: Path):
    commands = readme_commands("pytest benchmarks --benchmark-env=libero")
    assert len(commands) == 2, commands
    for i, command in enumerate(commands):
        metrics = tmp_path / f"{i}.json"
        done = run_pytest(command, "--benchmark-task=libero_spatial/0", "--benchmark-episodes=1",
                          "--benchmark-max-steps=20", "-k", "test_rollout", "-n", "0",
                          f"--benchmark-metrics={metrics}")  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        (row,) = read_metrics(metrics)["results"]
        assert row["id"] == "libero/libero_spatial/0" and row["error"] is None


@pytest.mark.e2e
def test_the_readme_speed_commands_store_and_fail_a_slowed_expert(tmp_path: Path):
    """The Speed section's two commands (and ``tox -e speed``, the first): stored, then
    compared with the expert slowed by 5 ms per call, which must fail the gate."""
    store, compare = readme_commands("pytest benchmarks/test_metaworld.py --benchmark-only")
    (tox,) = tox_commands("speed", tmp_path)
    assert tox == [*store[:2], "--benchmark-env=metaworld", *store[2:]], tox
    # Its own metrics path: the repository's default belongs to whichever session holds it.
    here = ["--benchmark-task=reach-v3", f"--benchmark-storage=file://{tmp_path / 'store'}",
            f"--benchmark-metrics={tmp_path / 'metrics.json'}"]  # fmt: skip
    first = run_pytest(store, *here, f"--benchmark-json={tmp_path / 'first.json'}")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    names = {b["name"] for b in read_metrics(tmp_path / "first.json")["benchmarks"]}
    assert names == {"test_policy_latency[metaworld/reach-v3]", "test_env_step[metaworld/reach-v3]"}
    assert len(list((tmp_path / "store").rglob("*.json"))) == 1
    slowed = run_pytest(
        compare, *here, "-k", "policy_latency", "--benchmark-policy=module:slowed_policy:make",
        PYTHONPATH=str(ROOT / "benchmarks" / "perf"), SLOW_S="0.005",
    )  # fmt: skip
    assert slowed.returncode == pytest.ExitCode.TESTS_FAILED, slowed.stdout[-3000:]
    assert "Performance has regressed" in slowed.stderr
    assert "test_policy_latency[metaworld/reach-v3]" in slowed.stderr


def test_the_readme_api_example_runs(tmp_path: Path):
    train_tiny_policy(tmp_path / "checkpoints" / "step_2000")
    done = subprocess.run(
        [sys.executable, "-c", readme_example_with("from pytest_benchmarks.api import evaluate")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rate, successes = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert 0 <= float(rate) <= 100 and re.fullmatch(r"\[\d\]", successes)


def readme_example_with(line: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", docs_text(), re.S)
    return next(block for block in blocks if line in block)


def test_the_readme_training_block_is_what_train_smoke_runs():
    """The README's record-train-evaluate block at full size; scripts/train_smoke/run.sh runs
    the same options at test sizes (tests/test_train_smoke.py)."""
    script = (ROOT / "scripts" / "train_smoke" / "run.sh").read_text()
    # The README trains on Meta-World's reach-v3: the script's defaults for it.
    assert "metaworld) defaults=(reach-v3 30 1000 10 100) ;;" in script
    script = script.replace('"$chunk"', "10")
    (train,) = readme_commands("HF_HUB_OFFLINE=1 lerobot-train")
    fixed = [t for t in train[2:] if t.startswith("--policy.") or t.startswith("--num_workers")]
    assert len(fixed) >= 10 and all(token in script for token in fixed), fixed
    for command in readme_commands("pytest "):
        if "--benchmark-record=demos" in command or "scripts/train_smoke" in command[1]:
            names = {t.split("=")[0] for t in command if t.startswith("--")}
            assert all(f"{name}=" in script for name in names), names
