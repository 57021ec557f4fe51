"""``pytest-benchmarks merge | compare`` on metrics files written by real pytest sessions.

The command runs in this process through ``cli.main(argv)``, which returns its exit status as
the console script does; one test runs the installed console script itself. The sessions that
write the files run in-process too (pytester's ``runpytest``), but for the one under xdist.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import outcomes, read_metrics, run

from pytest_benchmarks.cli import main

# The console script installed beside this interpreter, else the one on PATH.
_BESIDE = Path(sys.executable).with_name("pytest-benchmarks")
CLI = str(_BESIDE) if _BESIDE.exists() else shutil.which("pytest-benchmarks")


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``pytest-benchmarks ARGS`` in this process: its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(arg) for arg in args])
        except SystemExit as exit_:  # argparse's usage errors and --help
            status = exit_.code if isinstance(exit_.code, int) else 2
    return subprocess.CompletedProcess(["pytest-benchmarks", *map(str, args)], status,
                                       out.getvalue(), err.getvalue())  # fmt: skip


def session(project: pytest.Pytester, name: str, *args: str) -> Path:
    path = project.path / f"{name}.json"
    result = run(project, f"--benchmark-metrics={path}", "--benchmark-episodes=6", *args)
    assert result.ret in (0, 1), result.stdout.str()
    return path


@pytest.mark.skipif(CLI is None, reason="console script not installed")
def test_the_console_script_is_the_cli(toy_project: pytest.Pytester):
    """The installed ``pytest-benchmarks`` runs ``cli.main`` and exits with its status."""
    run = session(toy_project, "run")
    done = subprocess.run([CLI, "compare", run, run], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == cli("compare", run, run).stdout.splitlines()
    bad = subprocess.run([CLI, "merge"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "the following arguments are required" in bad.stderr


def test_merged_shards_equal_one_run(toy_project: pytest.Pytester):
    whole = session(toy_project, "whole")
    first = session(toy_project, "first", "--benchmark-task=walk")
    second = session(toy_project, "second", "--benchmark-task=stroll")
    out = toy_project.path / "merged.json"
    done = cli("merge", first, second, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "merged 2 files, 2 tasks" in done.stdout
    merged, single = read_metrics(out), read_metrics(whole)
    assert outcomes(merged) == outcomes(single)
    assert merged["overall"]["successes"] == single["overall"]["successes"] == 12
    assert merged["run"]["shards"] == [str(first), str(second)]


def test_a_merge_of_shards_from_other_environments_says_so_and_keeps_it(
    toy_project: pytest.Pytester,
):
    """Shards that ran under other package versions (or GPUs, or images) are merged, as one
    run on a mixed fleet is, but never silently: each difference is a line and stays in the
    merged run, whose fingerprint is the first shard's."""
    first = session(toy_project, "first", "--benchmark-task=walk")
    second = session(toy_project, "second", "--benchmark-task=stroll")
    document = read_metrics(second)
    numpy = document["run"]["fingerprint"]["packages"]["numpy"]
    document["run"]["fingerprint"]["packages"]["numpy"] = "0.9\x1b[2J"
    second.write_text(json.dumps(document))
    out = toy_project.path / "merged.json"
    done = cli("merge", first, second, "-o", out)
    assert done.returncode == 0, done.stderr
    change = f"{second}: numpy {numpy} → 0.9\\x1b[2J from {first}"
    assert (
        f"environment: {change}; merged, and the run's fingerprint is {first}'s (kept in "
        "run.environment_changes)"
    ) in done.stdout.splitlines()
    run = read_metrics(out)["run"]
    assert run["environment_changes"] == [change]
    assert run["fingerprint"]["packages"]["numpy"] == numpy
    same = cli("merge", first, session(toy_project, "third", "--benchmark-task=stroll"), "-o", out)
    assert (
        "environment:" not in same.stdout and "environment_changes" not in read_metrics(out)["run"]
    )


def test_shard_option_splits_the_selection_and_merges_back(toy_project: pytest.Pytester):
    whole = session(toy_project, "whole")
    # Shards split the whole selection, every installed benchmark's: name the toy alone.
    first = session(toy_project, "s1", "--benchmark-env=toy", "--benchmark-shard=1/2")
    second = session(toy_project, "s2", "--benchmark-env=toy", "--benchmark-shard=2/2", "-n", "2")
    assert [r["id"] for r in read_metrics(first)["results"]] == ["toy/stroll"]
    assert [r["id"] for r in read_metrics(second)["results"]] == ["toy/walk"]
    out = toy_project.path / "merged.json"
    assert cli("merge", first, second, "-o", out).returncode == 0
    assert outcomes(read_metrics(out)) == outcomes(read_metrics(whole))
    # More shards than tasks: an empty shard runs nothing, fails nothing, and leaves an empty,
    # valid metrics document, so a CI matrix's merge step has every shard.
    for workers in ("0", "2"):
        path = toy_project.path / f"empty-{workers}.json"
        empty = run(
            toy_project, "--benchmark-env=toy", "--benchmark-shard=3/3", "--benchmark-episodes=6",
            f"--benchmark-metrics={path}", "-n", workers,
        )  # fmt: skip
        assert empty.ret == pytest.ExitCode.OK
        empty.stdout.fnmatch_lines([f"benchmark shard 3/3 holds no task; metrics: {path}"])
        assert read_metrics(path)["results"] == []
    thirds = [
        session(toy_project, f"t{i}", "--benchmark-env=toy", f"--benchmark-shard={i}/3")
        for i in (1, 2)
    ]
    merged = cli("merge", *thirds, path, "-o", toy_project.path / "thirds.json")
    assert merged.returncode == 0, merged.stderr
    assert outcomes(read_metrics(toy_project.path / "thirds.json")) == outcomes(read_metrics(whole))
    bad = run(toy_project, "--benchmark-shard=3/2")
    bad.stderr.fnmatch_lines(
        ["ERROR: --benchmark-shard: '3/2' is not I/N with 1 <= I <= N (e.g. 2/4)"]
    )


def test_merge_refuses_overlap_and_mixed_settings(toy_project: pytest.Pytester):
    first = session(toy_project, "first", "--benchmark-task=walk")
    again = session(toy_project, "again", "--benchmark-task=walk,stroll")
    other_seed = session(toy_project, "seed", "--benchmark-task=stroll", "--benchmark-seed=5")
    done = cli("merge", first, again, "-o", toy_project.path / "m.json")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"pytest-benchmarks: error: {again}: task toy/walk is also in {first}; "
        "shards must not overlap"
    )
    done = cli("merge", first, other_seed, "-o", toy_project.path / "m.json")
    assert done.returncode == 2
    assert (
        f"{other_seed}: seed 1000 → 5 from {first}; shards of one run share every setting an "
        "outcome depends on"
    ) in done.stderr
    assert not (toy_project.path / "m.json").exists()


def test_compare_passes_an_unchanged_run_and_fails_a_broken_one(toy_project: pytest.Pytester):
    old = session(toy_project, "old")
    same = session(toy_project, "same")
    broken = session(toy_project, "broken", "--benchmark-policy=noop")
    done = cli("compare", old, same)
    assert done.returncode == 0, done.stdout
    assert "toy/walk: 6/6 (100%, 61–100) → 6/6 (100%, 61–100), McNemar p=1" in done.stdout
    assert done.stdout.strip().endswith(
        "2 tasks compared (stat, alpha 0.05, Holm over 2 that can fail): 0 regressed, "
        "0 improved → no regression"
    )
    done = cli("compare", old, broken, "--alpha", "0.05")
    assert done.returncode == 1
    # Both tasks lose all 6 paired episodes (p = 1/64): Holm's steps at 0.05/2, then 0.05/1.
    assert (
        "toy/stroll: 6/6 (100%, 61–100) → 0/6 (0%, 0–39), McNemar p=0.016 < 0.025 (Holm 1/2) "
        "→ regression" in done.stdout
    )
    assert "toy/walk: 6/6 (100%, 61–100) → 0/6 (0%, 0–39), McNemar p=0.016 < 0.05 (Holm 2/2)" in (
        done.stdout
    )
    assert done.stdout.strip().endswith("2 regressed, 0 improved → REGRESSION")


def test_version_1_files_without_lerobots_counts_still_compare_and_merge(
    toy_project: pytest.Pytester,
):
    new = session(toy_project, "new")
    document = read_metrics(new)
    assert document["schema_version"] == 2
    document["schema_version"] = 1
    for level in [*document["per_task"], *document["per_group"].values(), document["overall"]]:
        for key in ("n_success", "pc_success_ci95"):
            del level[key]
    for entry in document["per_task"]:
        del entry["n_episodes"], entry["pc_success"]
    old = toy_project.path / "old.json"
    old.write_text(json.dumps(document))
    done = cli("compare", old, new)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("0 regressed, 0 improved → no regression")
    document["schema_version"] = 2  # a version 2 file must carry them
    old.write_text(json.dumps(document))
    done = cli("compare", old, new)
    assert done.returncode == 2 and "not a pytest-benchmarks metrics file" in done.stderr
    assert "n_success" in done.stderr


def test_compare_says_when_the_gate_cannot_fail(toy_project: pytest.Pytester):
    """A 2-episode run can lose at most 2 paired episodes (p >= 1/4): the collapse passes, and
    compare says the gate was blind; --gate-power fail makes that the exit status."""
    old = session(toy_project, "old")
    short = session(toy_project, "short", "--benchmark-policy=noop", "--benchmark-episodes=2")
    done = cli("compare", old, short)
    assert done.returncode == 0, done.stdout
    assert (
        "toy/walk: 6/6 (100%, 61–100) → 0/2 (0%, 0–66), McNemar cannot detect any drop at this "
        "size (smallest p 0.25 >= 0.05; needs >= 6 episodes at 100%) → cannot fail" in done.stdout
    )
    assert done.stdout.strip().endswith("2 could not fail: need >= 6 episodes → no regression")
    done = cli("compare", old, short, "--gate-power", "fail")
    assert done.returncode == 1
    assert done.stdout.strip().endswith("→ GATE CANNOT FAIL")


def test_bad_files_are_one_line_errors(tmp_path: Path):
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"schema_version": 1, "results": [')
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps({"schema_version": 1, "results": []}))
    for path, message in [
        (corrupt, f"{corrupt}: not valid JSON (Expecting value at line 1)"),
        (
            edited,
            f"{edited}: not a pytest-benchmarks metrics file (top level: 'run' is a required property)",
        ),
        (
            tmp_path / "missing.json",
            f"{tmp_path / 'missing.json'}: cannot read: No such file or directory",
        ),
    ]:
        done = cli("compare", path, path)
        assert done.returncode == 2
        assert done.stderr.strip() == f"pytest-benchmarks: error: {message}"
        assert "Traceback" not in done.stderr
    done = cli("compare", corrupt, corrupt, "--alpha", "2")
    assert (
        done.returncode == 2
        and "--alpha: '2' is not a level between 0 and 1 (e.g. 0.05)" in done.stderr
    )


def test_report_markdown_and_chart(toy_project: pytest.Pytester):
    old = session(toy_project, "old")
    broken = session(toy_project, "broken", "--benchmark-policy=noop")
    markdown = toy_project.path / "summary" / "report.md"
    png = toy_project.path / "summary" / "chart.png"
    done = cli("report", broken, "--baseline", old, "-o", markdown, "--png", png)
    assert done.returncode == 0, done.stderr
    text = markdown.read_text()
    assert "| task | baseline | success (95% interval) | mean steps | time | verdict |" in text
    assert "| `toy/walk` | 6/6 (100%, 61–100) | 0/6 (0%, 0–39) | 30.0 |" in text
    assert "**regression** (McNemar p=0.016)" in text
    assert text.rstrip().endswith(
        "**Gate:** 2 tasks compared (stat, alpha 0.05, Holm over 2 that can fail): 2 regressed, "
        "0 improved → REGRESSION"
    )  # compare's closing line: report and compare judge by one road
    assert "cannot fail" not in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    height, width, _ = matplotlib.image.imread(png).shape
    assert width == 800 and height > 100
    done = cli("report", old)  # Markdown on stdout, no baseline columns
    assert done.returncode == 0
    assert done.stdout.startswith("| task | success (95% interval) | mean steps | time |")
    assert "**Overall:** 12/12 (100.0%, 95% interval 75.8–100.0) over 2 tasks." in done.stdout


def test_exact_gate_on_different_episodes_is_refused(toy_project: pytest.Pytester):
    old = session(toy_project, "old", "--benchmark-task=walk")
    reseeded = session(toy_project, "reseeded", "--benchmark-task=walk", "--benchmark-seed=7")
    assert cli("compare", old, old, "--gate", "exact").returncode == 0
    done = cli("compare", old, reseeded, "--gate", "exact")
    assert done.returncode == 2
    assert (
        "toy/walk: the exact gate compares the same episodes, but 6 of 6 new episodes"
        in done.stderr
    )


def test_compare_refuses_runs_it_cannot_judge(toy_project: pytest.Pytester):
    """A task that crashed (0/0) is not 'no significant drop': compare exits 3, one line per
    task; so do runs with no task in common. report marks the error as an error."""
    old = session(toy_project, "old", "--benchmark-task=walk,stroll")
    crashed = session(toy_project, "crashed", "--benchmark-task=walk,reset-error")
    # The crashed run's reset-error task stands in for stroll: same id, no episodes, an error.
    document = json.loads(crashed.read_text())
    for row in document["results"]:
        if row["id"] == "toy/reset-error":
            row.update(id="toy/stroll", task="stroll", task_id=1)
    crashed.write_text(json.dumps(document))
    done = cli("compare", old, crashed)
    assert done.returncode == 3, done.stdout + done.stderr
    assert (
        "toy/stroll: cannot compare: the new run's task failed: RuntimeError: the corridor has "
        "no floor" in done.stdout
    )
    assert done.stdout.strip().endswith("→ 1 TASK NOT COMPARABLE")
    other = session(toy_project, "other", "--benchmark-task=step-error")
    done = cli("compare", old, other)
    assert done.returncode == 3
    assert done.stderr.strip() == (
        "pytest-benchmarks: cannot compare: the runs share no task (old: 2 tasks, new: 1); "
        "nothing to gate"
    )
    report = cli("report", crashed, "--baseline", old)
    assert report.returncode == 0
    stroll = next(line for line in report.stdout.splitlines() if "`toy/stroll`" in line)
    assert stroll.endswith("| **error** |") and "error: RuntimeError" in stroll
    assert report.stdout.rstrip().endswith("→ 1 TASK NOT COMPARABLE"), report.stdout


def test_compare_and_merge_refuse_runs_of_different_render_modes(toy_project: pytest.Pytester):
    faithful = session(toy_project, "faithful", "--benchmark-task=walk")
    fast = session(toy_project, "fast", "--benchmark-task=walk", "--benchmark-render=fast")
    assert json.loads(fast.read_text())["run"]["render"] == "fast"
    done = cli("compare", faithful, fast)
    assert done.returncode == 3
    assert done.stderr.strip() == (
        "pytest-benchmarks: cannot compare: the old run and the new run are different "
        "experiments (render faithful → fast): runs that differ in --benchmark-render are not "
        "compared; run the new one with the old one's settings"
    )
    merged = cli("merge", faithful, fast, "-o", toy_project.path / "merged.json")
    assert merged.returncode == 2
    assert "render faithful → fast from" in merged.stderr
    report = cli("report", fast, "--baseline", faithful)  # a table, the refusal beneath it
    assert report.returncode == 0
    assert "**Gate:** not judged: the old run and the new run are different experiments" in (
        report.stdout
    )
    assert "no significant change" not in report.stdout


def test_hostile_inputs_and_outputs_are_one_line(toy_project: pytest.Pytester, tmp_path: Path):
    run = session(toy_project, "run")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00binary")
    digits = tmp_path / "digits.json"
    digits.write_text('{"schema_version": ' + "9" * 5000 + "}")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for path, message in [
        (binary, f"{binary}: not UTF-8 text (a binary file?)"),
        (digits, f"{digits}: not usable JSON (Exceeds the limit (4300 digits) *"),
        (deep, f"{deep}: JSON nested too deeply to be a metrics file"),
    ]:
        done = cli("compare", path, run)
        assert done.returncode == 2, done.stderr
        assert fnmatch.fnmatch(done.stderr.strip(), f"pytest-benchmarks: error: {message}")
    link = tmp_path / "link.json"
    link.symlink_to(run)
    for args, message in [
        (("merge", run, "-o", tmp_path), f"cannot write {tmp_path}: {tmp_path} is a directory"),
        (("merge", run, "-o", link), f"cannot write {link}: {link} is a symbolic link (to {run})*"),
        (("merge", run, "-o", "/dev/null"), "cannot write /dev/null: /dev/null is not a regular *"),
        (
            ("report", run, "--png", tmp_path),
            f"cannot write --png: {tmp_path}: {tmp_path} is a directory",
        ),
        (("report", run, "--html", run), f"--html: {run}: is also an input ({run}); *"),
        (
            ("report", run, "--png", tmp_path / "chart.bmpx"),
            f"--png: {tmp_path / 'chart.bmpx'}: unknown image format .bmpx; valid: .png, .svg, .pdf",
        ),
    ]:
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert fnmatch.fnmatch(done.stderr.strip(), f"pytest-benchmarks: error: {message}"), (
            done.stderr
        )
    assert link.is_symlink() and Path("/dev/null").is_char_device()


def test_merge_refuses_shards_of_different_counts(toy_project: pytest.Pytester):
    half = session(toy_project, "half", "--benchmark-task=walk,stroll", "--benchmark-shard=1/2")
    third = session(toy_project, "third", "--benchmark-task=walk,stroll", "--benchmark-shard=2/3")
    done = cli("merge", half, third, "-o", toy_project.path / "all.json")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"pytest-benchmarks: error: {third}: shard 2/3, but {half} is shard 1/2; shards of one "
        "run are cut with one count"
    )
    assert not (toy_project.path / "all.json").exists()


def test_every_command_and_option_has_help():
    import argparse

    from pytest_benchmarks.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == {
        "merge", "compare", "report", "history", "record-build", "slurm", "plan", "drift",
    }  # fmt: skip
    for name, sub in commands.choices.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_what_merge_and_report_cannot_vouch_for_is_said(
    toy_project: pytest.Pytester, tmp_path: Path, full_disk: Path, capsys: pytest.CaptureFixture
):
    """A FIFO given as a run is refused, not read for ever; a merge that lacks a shard names it
    and is partial, and its report says the run was interrupted; a baseline that shares no task
    is said, never "no regression"; a full disk names the file."""
    half = session(toy_project, "half", "--benchmark-env=toy", "--benchmark-shard=1/2")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert main(["compare", str(fifo), str(half)]) == 2
    assert (
        capsys.readouterr().err.strip() == f"pytest-benchmarks: error: {fifo}: not a regular file"
    )
    merged = tmp_path / "merged.json"
    assert main(["merge", str(half), "-o", str(merged)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "missing: shard 2/2; the merged run is partial"
    )
    run = read_metrics(merged)["run"]
    assert run["partial"] is True and run["missing_shards"] == ["2/2"]
    assert main(["report", str(merged)]) == 0
    assert "**Interrupted:** the run is partial (exit status 0); every task listed finished." in (
        capsys.readouterr().out
    )
    walk = session(toy_project, "walk", "--benchmark-task=walk")
    assert main(["report", str(half), "--baseline", str(walk)]) == 0
    text = capsys.readouterr().out
    assert "**Gate:** not judged: the runs share no task (old: 1 tasks, new: 1)" in text
    assert "no regression" not in text
    out = full_disk / "report.md"
    assert main(["report", str(half), "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"pytest-benchmarks: error: {out}: No space left on device"
    )


def test_the_gate_options_are_the_registrys(capsys: pytest.CaptureFixture[str]):
    """compare's and report's gate options are the pytest gate's settings: the same help,
    default and reading of a value (one line naming what is valid)."""
    from pytest_benchmarks.cli import GATE_OPTIONS, build_parser
    from pytest_benchmarks.core.settings import OPTIONS

    by_field = {o.field: o for o in OPTIONS}
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command, flags in [("compare", list(GATE_OPTIONS)), ("report", ["--alpha", "--gate"])]:
        actions = {a.option_strings[0]: a for a in commands[command]._actions if a.option_strings}
        for flag in flags:
            option = by_field[GATE_OPTIONS[flag]]
            assert (actions[flag].help, actions[flag].default) == (option.help, option.default)
    for flag, value, valid in [("--gate", "strict", "stat, exact, off"),
                               ("--gate-power", "loud", "warn, fail")]:  # fmt: skip
        capsys.readouterr()
        assert main(["compare", "a.json", "b.json", flag, value]) == 2
        assert capsys.readouterr().err == (
            f"pytest-benchmarks: error: {flag}: {value!r} is not one of {valid}\n"
        )


def test_compare_says_when_the_runs_ran_in_another_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """The run block's fingerprint: a simulator or library version that differs between two
    runs is a note before the verdicts, not a refusal."""
    from pytest_benchmarks.core import catalog, validation
    from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
    from pytest_benchmarks.metrics import run_info
    from pytest_benchmarks.metrics.document import build_metrics, write_metrics

    settings = validation.build(root=tmp_path, env="metaworld", task="reach-v3", episodes=4)
    (task,) = catalog.get("metaworld").select(["reach-v3"])
    episodes = [EpisodeRecord(i, 1000 + i, i, True, 9, 1.0, 1.0, 0.1) for i in range(4)]
    paths = []
    for name, mujoco in [("old", "2.0.0"), ("new", None)]:
        block = run_info.run_block(
            run_info.static_info([], tmp_path, settings), settings, 0, 0.0, False, 0
        )
        if mujoco is not None:
            block["fingerprint"]["packages"]["mujoco"] = mujoco
        paths.append(tmp_path / f"{name}.json")
        result = TaskResult(task, episodes, eval_s=0.1, planned=4)
        write_metrics(paths[-1], build_metrics([result], block, "scripted"))
    now = run_info.fingerprint(("mujoco", "metaworld"), False)["packages"]["mujoco"]
    assert main(["compare", *map(str, paths)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"note: the runs ran in another environment (mujoco 2.0.0 → {now})" in lines, lines


def test_an_output_that_is_also_an_input_is_refused(
    toy_project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
):
    """``report m.json -o m.json`` once replaced the run by its Markdown: an output that is one
    of the command's inputs (however its path is spelled) is refused in one line, nothing
    written (an output that is a link is refused as one already)."""
    run = session(toy_project, "run")
    other = session(toy_project, "other")
    before = run.read_bytes()
    again = run.parent / "." / run.name  # the same file, spelled otherwise
    for argv in (
        ["report", str(run), "-o", str(run)],
        ["report", str(run), "--png", str(again)],
        ["report", str(other), "--baseline", str(run), "-o", str(again)],
        ["merge", str(other), str(run), "-o", str(again)],
    ):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "is also an input" in err and err.count("\n") == 1, err
    assert run.read_bytes() == before
