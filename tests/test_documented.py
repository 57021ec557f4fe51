"""What the README and the manual promise about sessions, each checked by running it: ini keys, the auto batch
size under xdist, --dist modes, where and when simulators are built, the API's policy kinds and
--benchmark-device auto."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from checkpoints import train_tiny_policy
from helpers import ROOT, outcomes, read_metrics, run, run_in_subprocess

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog
from pytest_benchmarks.policies import make_policy
from pytest_benchmarks.policies.hub import resolve_device


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    document = read_metrics(pytester.path / "benchmark-results" / "metrics.json")
    return {row["id"]: row for row in document["results"]}


def test_ini_keys_set_the_options_and_the_command_line_wins(toy_project: pytest.Pytester):
    toy_project.makeini("[pytest]\nbenchmark_episodes = 5\nbenchmark_seed = 7\n")
    run(toy_project, "--benchmark-task=walk").assert_outcomes(passed=2)
    (row,) = rows(toy_project).values()
    assert row["n_episodes"] == 5 and [e["seed"] for e in row["episodes"]] == [7, 8, 9, 10, 11]
    run(toy_project, "--benchmark-task=walk", "--benchmark-episodes=2").assert_outcomes(passed=2)
    (row,) = rows(toy_project).values()
    assert row["n_episodes"] == 2 and row["episodes"][0]["seed"] == 7


def test_auto_batch_size_shares_the_cpus_among_xdist_workers(toy_project: pytest.Pytester):
    cpus = len(os.sched_getaffinity(0))
    for workers in (0, 2):
        result = run(toy_project, "--benchmark-episodes=8", "-n", str(workers))
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(["benchmarks: *batch size auto*"])
        expected = max(1, min(math.floor(0.7 * cpus / max(1, workers)), 8, 64))
        assert {row["batch_size"] for row in rows(toy_project).values()} == {expected}


def workers_by_test(result: pytest.RunResult) -> dict[str, str]:
    found = re.findall(r"\[(gw\d+)\] .*?PASSED (\S+)", result.stdout.str())
    return {test: worker for worker, test in found}


def test_other_dist_modes_are_respected_as_given(toy_project: pytest.Pytester):
    toy_project.makepyfile(
        test_more="""
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_again(evaluate):
    assert evaluate().error is None
"""
    )
    # --dist load (the default): each task's tests on one worker, the tasks spread.
    load = run(toy_project, "-n", "2", "-v")
    load.assert_outcomes(passed=6)
    placed = workers_by_test(load)
    for task in ("walk", "stroll"):
        assert len({w for t, w in placed.items() if f"[toy/{task}]" in t}) == 1, placed
    # --dist loadfile: xdist's own scheduler, every test of a file on one worker.
    loadfile = run(toy_project, "-n", "2", "-v", "--dist=loadfile")
    loadfile.assert_outcomes(passed=6)
    placed = workers_by_test(loadfile)
    assert len(placed) == 6
    for module in ("test_toy.py", "test_more.py"):
        assert len({w for t, w in placed.items() if t.startswith(module)}) == 1, placed
    assert {r["id"] for r in rows(toy_project).values()} == {"toy/walk", "toy/stroll"}


def lifecycle(log: Path) -> list[tuple[str, int, int, bool, float]]:
    """(event, pid, parent pid, parent is a forkserver, time) per simulator built or closed."""
    events = []
    for line in log.read_text().splitlines():
        event, pid, ppid, forkserver, when = line.split()
        events.append((event, int(pid), int(ppid), forkserver == "1", float(when)))
    return events


def test_simulators_are_built_lazily_in_forkserver_workers_at_most_a_batch_at_once(
    toy_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    log = toy_project.path / "envs.log"
    monkeypatch.setenv("TOY_ENV_LOG", str(log))
    run_in_subprocess(
        toy_project, "--benchmark-episodes=4", "--benchmark-batch-size=2"
    ).assert_outcomes(passed=4)
    events = lifecycle(log)
    builds = [e for e in events if e[0] == "build"]
    # Two tests per task, one vector env of two slots each: four simulators, not eight.
    assert len(builds) == 4
    assert len({pid for _, pid, *_ in builds}) == 4  # one per vector-env worker process
    assert all(forkserver for *_, forkserver, _ in builds), builds  # children of a forkserver
    assert all(ppid != os.getpid() for _, _, ppid, *_ in builds)  # not the pytest process
    live = peak = 0
    for event, *_ in sorted(events, key=lambda e: e[-1]):
        live += 1 if event == "build" else -1
        peak = max(peak, live)
    assert peak == 2 and live == 0  # a task's envs close before the next task's start

    # --benchmark-sync: every simulator in the pytest process itself (a child of this test).
    log.unlink()
    run_in_subprocess(
        toy_project, "--benchmark-episodes=4", "--benchmark-batch-size=2", "--benchmark-sync"
    ).assert_outcomes(passed=4)
    builds = [e for e in lifecycle(log) if e[0] == "build"]
    assert len(builds) == 4 and {ppid for _, _, ppid, *_ in builds} == {os.getpid()}


def test_the_api_takes_a_spec_a_policy_object_or_a_factory(tmp_path: Path):
    metaworld = catalog.get("metaworld")
    run_args = {"tasks": ["reach-v3"], "episodes": 3, "batch_size": 2, "max_steps": 40}
    by_spec = evaluate("metaworld", "scripted", **run_args)
    task = by_spec.results[0].task
    built = []

    def factory(env_config, num_envs):
        built.append((env_config.task, num_envs))
        return make_policy("scripted", metaworld, env_config, num_envs)

    by_factory = evaluate("metaworld", factory, **run_args)
    assert built == [(task, 2)]
    scripted = make_policy("scripted", metaworld, factory_config(metaworld), 2)
    by_object = evaluate("metaworld", scripted, **run_args)
    assert outcomes(by_spec.metrics) == outcomes(by_factory.metrics) == outcomes(by_object.metrics)
    assert by_object.results[0].policy == by_spec.results[0].policy


def factory_config(metaworld):
    from pytest_benchmarks.core.tasks import EnvConfig

    task = metaworld.select(["reach-v3"])[0]
    return EnvConfig(task, 40, 1000)


def test_device_auto_is_cuda_when_torch_sees_a_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    checkpoint = tmp_path / "ckpt"
    train_tiny_policy(checkpoint)
    metaworld = catalog.get("metaworld")
    policy = make_policy(str(checkpoint), metaworld, factory_config(metaworld), 1, "auto")
    assert {p.device.type for p in policy.model.parameters()} == {"cpu"}  # type: ignore[attr-defined]
    # No GPU exists here: torch is told it has one, and auto picks it.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu"


def test_memory_script_states_its_growth_as_a_figure():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "perf" / "memory.py"
    done = subprocess.run(
        [sys.executable, str(script), "--episodes", "12", "--every", "4", "--task", "reach-v3"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"growth from episode 8 to 12: [+-]\d+\.\d MiB \([+-]\d+\.\d+% of \d+\.\d MiB; "
        r"[+-]\d+\.\d KiB per episode\)",
        last,
    ), last


def test_the_architecture_page_names_every_module():
    """docs/architecture.md's module table names each module of the package as it is."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    modules = sorted((ROOT / "pytest_benchmarks").rglob("*.py"))
    unnamed = [
        str(path.relative_to(ROOT))
        for path in modules
        if path.stem != "__init__" and f"`{path.stem}`" not in page and path.name not in page
    ]
    assert unnamed == [], unnamed


def test_every_timing_the_readme_quotes_is_a_figure_measured_and_dated(tmp_path: Path):
    """docs/figures.toml holds each timing with the command that measured it: the README
    quotes each, and a timing written on the page alone (or a figure changed in the file
    alone) is one line from ``scripts/figures.py --check``, which the docs build runs."""
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "figures.py"))
    figures = script["load"]()
    assert script["problems"](figures) == []
    assert all(figure["measured"] and figure["on"] for figure in figures.values())
    (tmp_path / "README.md").write_text(
        "Runs in about 40 seconds on two\nCPUs. The tests take 12 minutes.\n"
    )
    readme = {**figures["main_job"], "pages": ["README.md"]}
    toy = {"main_job": {**readme, "text": "about 40 seconds on two CPUs"},
           "other": {**readme, "text": "about 3 minutes"}}  # fmt: skip
    assert script["problems"](toy, tmp_path) == [
        "README.md: does not quote figure other ('about 3 minutes')",
        "README.md: quotes a timing that docs/figures.toml does not hold ('12 minutes'); add "
        "it there with how it was measured",
    ]


def test_no_function_or_module_in_the_package_is_too_long_to_read_whole(tmp_path: Path):
    """``scripts/sizes.py`` (in scripts/lint.sh) finds no function over 80 lines (decorators
    left out) nor module over 450 in the package, and names each one in a package that has
    them, with a waiver that no longer matches anything."""
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "sizes.py"))
    assert script["oversized"]() == []
    package = tmp_path / "pkg"
    package.mkdir()
    lines = [f"    x{i} = {i}\n" for i in range(80)]
    # 80 lines from its def: at the limit; its decorators are not counted.
    (package / "fits.py").write_text("@decorated\n@twice\ndef at_limit():\n" + "".join(lines[:79]))
    method = "".join("    " + line for line in lines)  # 81 lines from its def
    (package / "long.py").write_text("class Slow:\n    def step(self):\n" + method)
    (package / "big.py").write_text("x = 0\n" * 451)
    assert script["oversized"](package, waived={("pkg/fits.py", "at_limit")}) == [
        "pkg/big.py: 451 lines (at most 450)",
        "pkg/long.py:2: function Slow.step is 81 lines (at most 80)",
        "pkg/fits.py: waived function at_limit is not over 80 lines (or is gone): take it off "
        "WAIVED in scripts/sizes.py",
    ]
