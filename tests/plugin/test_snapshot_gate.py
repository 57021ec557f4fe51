"""The snapshot gate in whole pytest sessions: ``assert evaluate() == snapshot``.

The toy corridor gives exact, fast control: its slow task needs 20, 22, 24 or 26 steps by
initial state within its 30, and a walker of shorter stride (``TOY_STRIDE=0.7``: 29, 32, 35,
38 steps) turns 100% into 25% on the same episodes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from helpers import ROOT, TOY_CONFTEST

from pytest_benchmarks.metrics.snapshots import dumps

GATED = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_gate(evaluate, snapshot):
    assert evaluate() == snapshot
"""

#: A module whose first test runs each task's plan without the gate (as the benchmark modules'
#: test_rollout does): the plan's stopping rule still applies.
ROLLOUT_FIRST = GATED.replace(
    "def test_gate(",
    "def test_rollout(evaluate):\n    assert evaluate().n_episodes\n\ndef test_gate(",
)

SNAPS = Path("__benchmark_snapshots__") / "test_gate" / "test_gate" / "toy"


@pytest.fixture
def gated(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(test_gate=GATED)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A session in this process: the gate's sessions are many and short, and a new process
    for each spent most of its time starting up."""
    return pytester.runpytest("-p", "no:cacheprovider", "--benchmark-episodes=8", *args)


def test_update_stores_one_file_per_task_and_a_rerun_passes(gated: pytest.Pytester):
    run(gated, "--snapshot-update", "-n", "2").assert_outcomes(passed=2)
    stroll = json.loads((gated.path / SNAPS / "stroll.json").read_text())
    assert stroll["id"] == "toy/stroll" and stroll["successes"] == 8
    assert [e["init_state"] for e in stroll["episodes"]] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [e["steps"] for e in stroll["episodes"]][:4] == [20, 22, 24, 26]
    assert "duration_s" not in stroll["episodes"][0]
    # Each episode's initial state is kept as a digest: the same start, the same digest.
    digests = [e["initial_digest"] for e in stroll["episodes"]]
    assert digests[:4] == digests[4:] and len(set(digests[:4])) == 4, digests
    assert (gated.path / SNAPS / "walk.json").is_file()
    result = run(gated)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "snapshot gate: 2 tasks compared (stat, alpha 0.05, Holm over 2 that can fail): 0 regressed*"
        ]
    )


def test_a_drop_fails_with_one_readable_line(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.setenv("TOY_STRIDE", "0.7")
    result = run(gated, "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    # 6 of 8 paired episodes lost: McNemar p = 1/64, judged at 0.05 / 2 tasks.
    result.stdout.fnmatch_lines(
        [
            "*toy/stroll: 8/8 (100%, 68–100) → 2/8 (25%, 7–59), McNemar p=0.016 < 0.025 "
            "→ regression (if intended, store it with --snapshot-update)",
            "*REGRESSION toy/stroll*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_the_pytest_gate_and_compare_print_the_same_verdict_lines(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """One decision, one set of lines: a session judged against its snapshots and the same two
    runs given to ``pytest-benchmarks compare`` reach the same verdicts, said the same way."""
    from pytest_benchmarks.cli import main

    run(gated, "--snapshot-update", "--benchmark-metrics=old.json").assert_outcomes(passed=2)
    monkeypatch.setenv("TOY_STRIDE", "0.7")
    judged = run(gated, "--benchmark-metrics=new.json")
    judged.assert_outcomes(passed=1, failed=1)
    ours = judged.stdout.lines
    closing = next(i for i, line in enumerate(ours) if line.startswith("snapshot gate: "))
    capsys.readouterr()
    assert main(["compare", str(gated.path / "old.json"), str(gated.path / "new.json")]) == 1
    theirs = capsys.readouterr().out.splitlines()
    assert [line for line in theirs if not line.startswith("  held ")] == [
        *ours[closing - 1 : closing],
        ours[closing].removeprefix("snapshot gate: "),
    ]
    assert ours[closing - 1].startswith("  REGRESSION toy/stroll: 8/8")
    assert any(line.startswith("  held       toy/walk: 8/8") for line in theirs), theirs


@pytest.mark.parametrize(
    ("args", "changed"),
    [
        (["--benchmark-max-steps=100"], "max_steps 30 → 100): runs that differ in "
                                        "--benchmark-max-steps are"),
        (["--benchmark-settle-steps=2"], "settle_steps default → 2): runs that differ in "
                                         "--benchmark-settle-steps are"),
    ],
)  # fmt: skip
def test_a_run_of_another_experiment_is_refused_not_judged(
    gated: pytest.Pytester, args: list[str], changed: str
):
    """A run with another step limit (more time for the policy: it would pass, or less: it
    would fail) or other initial states is not the snapshot's experiment: each task's test
    fails with one line naming the setting and both values, and no statistic is shown."""
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    result = run(gated, *args)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        f"*toy/stroll: snapshot *stroll.json: the snapshot and this run are different "
        f"experiments ({changed} not compared; run with the snapshot's settings, or store a new "
        "snapshot with --snapshot-update --benchmark-snapshot-replace",
    ])  # fmt: skip
    assert "McNemar" not in result.stdout.str()


def test_episodes_that_started_elsewhere_are_refused_naming_the_first(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """Episodes the plan pairs (same index, seed and initial state number) whose simulators
    started from other states are not paired: the gate refuses each task in one line naming
    the first such episode, ``compare`` leaves the task unjudged, an update keeps the
    snapshot, and a sequential run stops the task at once."""
    from pytest_benchmarks.cli import main

    run(gated, "--snapshot-update", "--benchmark-metrics=old.json").assert_outcomes(passed=2)
    monkeypatch.setenv("TOY_MOVED", "3")  # episode 3 starts a millimetre back
    result = run(gated, "--benchmark-metrics=new.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*toy/stroll: snapshot *stroll.json: episode 3 started from another initial state in "
        "this run than in the snapshot (digest *, the snapshot *): the episodes are not paired, "
        "so they are not compared",
    ])  # fmt: skip
    assert "McNemar" not in result.stdout.str()
    capsys.readouterr()
    assert main(["compare", str(gated.path / "old.json"), str(gated.path / "new.json")]) == 3
    out = capsys.readouterr().out
    assert re.search(
        r"unjudged +toy/walk: cannot compare: episode 3 started from another initial state in "
        r"the new run than in the old run \(digest [0-9a-f]{12}, the old run [0-9a-f]{12}\)",
        out,
    ), out
    kept = run(gated, "--snapshot-update")
    kept.stdout.fnmatch_lines(
        ["toy/walk: snapshot kept: its episode 3 started from another initial state (*"]
    )
    plan = ["--benchmark-episodes=20", "--benchmark-batch-size=1", "--benchmark-sync"]
    run(gated, "--snapshot-update", "--benchmark-snapshot-replace", *plan)
    monkeypatch.setenv("TOY_MOVED", "1")
    stopped = run(gated, *plan, "--benchmark-sequential", "--benchmark-metrics=seq.json")
    stopped.assert_outcomes(failed=2)
    rows = json.loads((gated.path / "seq.json").read_text())["results"]
    assert [r["stopped"] for r in rows] == ["UNPAIRED at episode 1: another initial state than "
                                            "the snapshot's"] * 2  # fmt: skip
    assert [r["n_episodes"] for r in rows] == [2, 2]


def test_snapshots_stored_without_digests_get_them_and_nothing_else(gated: pytest.Pytester):
    """``scripts/snapshot_digests.py`` adds each episode's digest and sketch to a snapshot
    stored before they were kept, from one reset per episode: those a full run stores, and not
    a byte else of the file changed."""
    import runpy

    import toybench  # noqa: F401  (registers "toy" in this process)

    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    stored = {p: p.read_text() for p in (gated.path / SNAPS).glob("*.json")}
    for path, text in stored.items():
        doc = json.loads(text)
        for episode in doc["episodes"]:
            del episode["initial_digest"], episode["initial_sketch"]
        path.write_text(dumps(doc))
    script = runpy.run_path(str(ROOT / "scripts" / "snapshot_digests.py"))
    assert script["main"]([str(gated.path / "__benchmark_snapshots__")]) == 0
    assert {p: p.read_text() for p in stored} == stored
    run(gated).assert_outcomes(passed=2)


def test_an_improvement_passes_and_says_how_to_store_it(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TOY_STRIDE", "0.7")
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.delenv("TOY_STRIDE")
    result = run(gated)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "  improved   toy/stroll: 2/8 (25%, 7–59) → 8/8 (100%, 68–100)*→ improvement*",
            "*run with --snapshot-update to make them the new baseline",
            "snapshot gate: 2 tasks compared *: 0 regressed, 1 improved → no regression",
        ]
    )
    # Two more successes are no significant change: neither "improved" nor a hint to store it
    # (and a 2/8 baseline cannot fail at 8 episodes: the summary says so).
    monkeypatch.setenv("TOY_STRIDE", "0.75")  # the stroll in 27, 30, 32, 35 steps
    result = run(gated)
    result.stdout.fnmatch_lines(
        ["snapshot gate: 2 tasks compared *: 0 regressed, 0 improved, 1 could not fail*"]
    )
    assert "--snapshot-update to make them" not in result.stdout.str()


def test_a_gate_that_cannot_fail_says_so_and_can_be_made_an_error(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """Two episodes against 8-episode snapshots: even 2/2 → 0/2 (p = 1/4) cannot reach the
    level, so the verdict says the gate is blind, with the episodes it needs."""
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.setenv("TOY_STRIDE", "0.1")  # neither task reaches its end in 30 steps
    collapsed = ["--benchmark-episodes=2"]
    result = run(gated, *collapsed)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "  cannot fail toy/stroll: 8/8 (100%, 68–100) → 0/2 (0%, 0–66), McNemar cannot "
            "detect any drop at this size (smallest p 0.25 >= 0.05; needs >= 6 episodes at "
            "100%) → cannot fail*",
            "snapshot gate: 2 tasks compared *: 0 regressed, 0 improved, 2 could not fail: "
            "need >= 6 episodes → no regression",
        ]
    )
    failed = run(gated, *collapsed, "--benchmark-gate-power=fail")
    failed.assert_outcomes(failed=2)
    failed.stdout.fnmatch_lines(
        [
            "*toy/walk: *cannot fail*(--benchmark-gate-power=fail)",
            "snapshot gate: *GATE CANNOT FAIL",
        ]
    )
    # ... and --snapshot-update does not shrink the baseline to the short run.
    kept = run(gated, "--snapshot-update", "--benchmark-episodes=2")
    kept.stdout.fnmatch_lines(["toy/walk: snapshot kept: it holds 8 episodes, this run 2 *"])
    assert len(json.loads((gated.path / SNAPS / "walk.json").read_text())["episodes"]) == 8


STUMBLER = """
import numpy as np

#: Per task, the episode seeds on which the walker stands still (and so fails).
STILL = {"walk": set(range(1000, 1008)), "stroll": {1000, 1001, 1002, 1003, 1004}}


class Stumbler:
    def __init__(self, task, num_envs):
        self.still = STILL.get(task, set())
        self.seeds = [None] * num_envs

    def reset(self, slots, seeds):
        for slot, seed in zip(slots, seeds):
            self.seeds[slot] = seed

    def act(self, batch):
        return np.array([[0.0 if s in self.still else 1.0] for s in self.seeds], np.float32)

    def identity(self):
        return {"source": "module", "id": "stumbler", "revision": None}


def make(config, num_envs):
    return Stumbler(config.task.task, num_envs)
"""


def test_holm_step_down_fails_the_session_for_a_drop_only_its_second_step_finds(
    gated: pytest.Pytester,
):
    """walk loses 8 of 8 paired episodes (p = 1/256 < 0.05/2: its test fails); stroll loses 5
    (p = 1/32): above 0.05/2, so its own test passes, but below 0.05/1, Holm's second step.
    Bonferroni would pass stroll; Holm fails the session for it, and says so."""
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    gated.makepyfile(stumbler=STUMBLER)
    result = run(gated, "--benchmark-policy=module:stumbler:make", "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "  REGRESSION toy/stroll: 8/8 * → 3/8 *, McNemar p=0.031 < 0.05 (Holm 2/2) → "
            "regression; the snapshot is of another policy (toy.walker, this run stumbler): a "
            "different experiment (Holm's step-down, after the tests ran: the session fails)",
            "  REGRESSION toy/walk: 8/8 * → 0/8 *, McNemar p=0.0039 < 0.025 (Holm 1/2)*",
            "snapshot gate: 2 tasks compared *: 2 regressed, 0 improved → REGRESSION",
        ]
    )
    metrics = json.loads((gated.path / "benchmark-results" / "metrics.json").read_text())
    assert metrics["run"]["exitstatus"] == 1


def test_update_rewrites_exactly_and_only_when_the_outcome_changed(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    walk = gated.path / SNAPS / "walk.json"
    os.utime(walk, (1_000_000, 1_000_000))
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    assert walk.stat().st_mtime == 1_000_000  # same outcome: untouched
    # Another step limit is another experiment: kept unless replacing is asked for.
    kept = run(gated, "--snapshot-update", "--benchmark-max-steps=21")
    kept.assert_outcomes(passed=2)
    line = "toy/stroll: snapshot kept: this run changed max_steps 30 → 21 "
    kept.stdout.fnmatch_lines([line + "(--benchmark-snapshot-replace replaces it)"])
    assert json.loads((gated.path / SNAPS / "stroll.json").read_text())["successes"] == 8
    replace = ["--snapshot-update", "--benchmark-max-steps=21", "--benchmark-snapshot-replace"]
    run(gated, *replace).assert_outcomes(passed=2)
    stroll = json.loads((gated.path / SNAPS / "stroll.json").read_text())
    assert stroll["settings"]["max_steps"] == 21
    assert stroll["successes"] == 2 and [e["success"] for e in stroll["episodes"]][:2] == [
        True,
        False,
    ]
    # The same settings and another outcome (the policy got worse): rewritten.
    monkeypatch.setenv("TOY_STRIDE", "0.1")
    run(gated, "--snapshot-update", "--benchmark-max-steps=21").assert_outcomes(passed=2)
    assert json.loads((gated.path / SNAPS / "stroll.json").read_text())["successes"] == 0
    assert not list((gated.path / SNAPS).glob(".*")), "no temporary files left"


def test_partial_runs_neither_report_nor_delete_other_tasks(gated: pytest.Pytester):
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    for args in (["--benchmark-task=walk"], ["-k", "stroll"], ["-n", "2", "-k", "walk"]):
        result = run(gated, "--snapshot-update", *args)
        assert result.ret == 0 and result.parseoutcomes()["passed"] == 1
        assert "unused" not in result.stdout.str()
        assert {p.name for p in (gated.path / SNAPS).iterdir()} == {"walk.json", "stroll.json"}


def test_the_comparison_only_answers_and_the_test_still_fails_on_a_drop(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """``==`` raises nothing (a comparison kept in a variable is False); the gate's verdict is
    the test's outcome when its call ends, asserted or not, in the same one line."""
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    gated.makepyfile(
        test_gate=GATED.replace(
            "assert evaluate() == snapshot",
            "same = evaluate() == snapshot\n    print('compared:', same)",
        )
    )
    monkeypatch.setenv("TOY_STRIDE", "0.7")
    result = run(gated, "-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*compared: True", "*compared: False"])
    result.stdout.fnmatch_lines(["*toy/stroll: 8/8*→ regression*(if intended, *)"])
    assert "Traceback" not in result.stdout.str()


def test_a_missing_snapshot_fails_and_says_how_to_create_it(gated: pytest.Pytester):
    result = run(gated, "--benchmark-task=walk")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*toy/walk: no snapshot at *walk.json; store it with --snapshot-update"]
    )


def test_gate_modes_and_level(gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.setenv("TOY_STRIDE", "0.7")  # the stroll: 8/8 → 2/8
    run(gated, "--benchmark-gate=off").assert_outcomes(passed=2)
    # Holm's first step: alpha 0.1 over 2 tasks is 0.05; p = 1/64 still fails.
    result = run(gated, "--benchmark-alpha=0.1")
    result.stdout.fnmatch_lines(["*p=0.016 < 0.05 → regression*"])
    # At a stricter level the same drop is not significant.
    result = run(gated, "--benchmark-alpha=0.01")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*0 regressed*"])
    # The exact gate fails on a single lost episode.
    monkeypatch.setenv("TOY_STRIDE", "0.85")  # the stroll: 8/8 → 6/8
    result = run(gated, "--benchmark-gate=exact")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*toy/stroll: 8/8 * → 6/8 *, 2 episodes lost, 0 gained → regression*"]
    )
    # ... and refuses to compare episodes the snapshot does not hold.
    result = run(gated, "--benchmark-seed=5", "--benchmark-gate=exact")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*toy/walk: snapshot *walk.json: *are not in the baseline*"])


EPISODE = '{{"index": {0}, "seed": 1000, "init_state": 0, "success": {1}, "steps": 5}}'


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        (
            '{"id": "toy/walk", "episodes": [{"index": 0}]}',
            "not a task snapshot (episodes/0: 'seed' is a required property)",
        ),
        ('{"id": "toy/stroll", "episodes": []}', "holds task 'toy/stroll', not 'toy/walk'"),
        # Hand edits that used to be read silently.
        (
            '{"id": "toy/walk", "episodes": [' + EPISODE.format(0, '"false"') + "]}",
            "not a task snapshot (episodes/0/success: 'false' is not of type 'boolean')",
        ),
        (
            '{"id": "toy/walk", "episodes": ['
            + EPISODE.format(0, "true").replace("1000", "1000.5")
            + "]}",
            "not a task snapshot (episodes/0/seed: 1000.5 is not of type 'integer')",
        ),
        (
            '{"id": "toy/walk", "episodes": [' + EPISODE.format(-1, "true") + "]}",
            "not a task snapshot (episodes/0/index: -1 is less than the minimum of 0)",
        ),
        (
            '{"id": "toy/walk", "episodes": ['
            + EPISODE.format(0, "true")
            + ", "
            + EPISODE.format(0, "true")
            + "]}",
            "episode index 0 appears more than once",
        ),
        (
            '{"id": "toy/walk", "successes": 5, "episodes": [' + EPISODE.format(0, "true") + "]}",
            "successes is 5, but its episodes give 1",
        ),
        (
            '{"id": "toy/walk", "n_episodes": -3, "episodes": []}',
            "not a task snapshot (n_episodes: -3 is less than the minimum of 0)",
        ),
        (
            '{"id": "toy/walk", "settings": {"max_steps": 30}, "episodes": ['
            + EPISODE.format(0, "true").replace('"steps": 5', f'"steps": {10**30}')
            + "]}",
            f"episode 0 took {10**30} steps, more than the snapshot's own step limit "
            "(settings.max_steps 30)",
        ),
    ],
)
def test_a_corrupt_snapshot_is_one_line(gated: pytest.Pytester, content: str, message: str):
    (gated.path / SNAPS).mkdir(parents=True)
    (gated.path / SNAPS / "walk.json").write_text(content)
    result = run(gated, "--benchmark-task=walk")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*toy/walk: snapshot *walk.json: {message}*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--benchmark-gate=strict"], "--benchmark-gate: 'strict' is not one of stat, exact, off"),
        (["--benchmark-alpha=1.5"], "--benchmark-alpha: '1.5' is not a level between 0 and 1*"),
        (
            ["--benchmark-gate-power=loud"],
            "--benchmark-gate-power: 'loud' is not one of warn, fail",
        ),
    ],
)
def test_bad_gate_options_are_one_line(gated: pytest.Pytester, args: list[str], line: str):
    result = run(gated, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {line}"])


def test_committed_snapshots_catch_a_moderate_drop_and_pass_fresh_episodes(
    pytester: pytest.Pytester,
):
    """The committed Meta-World snapshots at the committed settings (50 episodes, seed 1000):
    the expert with a random action in 38% of its steps (50/50 → 37/50 on push) fails
    the gate, at a p-value below even the default MT10 run's first Holm step (0.05 / 10); the
    unchanged expert on other episodes (another seed) passes."""
    root = ROOT / "benchmarks"
    pytester.makepyfile(test_metaworld=(root / "test_metaworld.py").read_text())
    stored = Path("__benchmark_snapshots__/test_metaworld/test_no_regression/metaworld")
    (pytester.path / stored).mkdir(parents=True)
    push = stored / "push-v3.json"
    (pytester.path / push).write_text((root / push).read_text())
    args = ["-p", "no:cacheprovider", "-k", "test_no_regression"]
    args += ["--benchmark-task=push-v3", "--benchmark-episodes=50"]
    # In a process of its own: its module is named as benchmarks/'s, which a session that
    # collects both has imported.
    degraded = pytester.runpytest_subprocess(*args, "--benchmark-policy=scripted+noise:0.38")
    degraded.assert_outcomes(failed=1)
    lines = [line for line in degraded.stdout.lines if line.startswith("  REGRESSION ")]
    assert len(lines) == 1, degraded.stdout.str()
    rate = re.search(r"→ (\d+)/50", lines[0])
    p_value = re.search(r"McNemar p=(\S+) <", lines[0])
    assert rate and p_value, lines[0]
    assert 25 <= int(rate.group(1)) <= 45 and float(p_value.group(1)) < 0.05 / 10, lines[0]
    reseeded = pytester.runpytest_subprocess(*args, "--benchmark-seed=2000")
    reseeded.assert_outcomes(passed=1)
    reseeded.stdout.fnmatch_lines(["snapshot gate: 1 task compared *: 0 regressed*"])


def test_snapshots_of_a_deselected_module_survive(gated: pytest.Pytester):
    """The project's own default run: a benchmark left out by --benchmark-env keeps its tests
    collected but deselected, and its committed snapshots must survive an update run."""
    gated.makepyfile(
        test_mw="""
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_gate(evaluate, snapshot):
    assert evaluate() == snapshot
"""
    )
    run(gated, "--snapshot-update", "--benchmark-env=toy").assert_outcomes(passed=2, deselected=1)
    other = gated.path / "__benchmark_snapshots__" / "test_mw" / "test_gate" / "metaworld"
    other.mkdir(parents=True)
    (other / "push-v3.json").write_text((gated.path / SNAPS / "walk.json").read_text())
    result = run(gated, "--snapshot-update", "--benchmark-env=toy")
    result.assert_outcomes(passed=2, deselected=1)
    assert "unused" not in result.stdout.str() and "deleted" not in result.stdout.str()
    assert (other / "push-v3.json").is_file()


@pytest.mark.parametrize("workers", ["0", "2"])
def test_update_into_a_read_only_folder_is_refused_before_any_episode(
    gated: pytest.Pytester, read_only_dir: Path, workers: str
):
    (gated.path / "__benchmark_snapshots__").symlink_to(read_only_dir)
    result = run(gated, "--snapshot-update", "-n", workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    folder = gated.path / "__benchmark_snapshots__" / "test_gate"
    assert (
        f"--snapshot-update: cannot write snapshots in {folder}: directory "
        f"{gated.path / '__benchmark_snapshots__'} is not writable (Read-only file system)"
    ) in result.stdout.str() + result.stderr.str()
    metrics = gated.path / "benchmark-results" / "metrics.json"
    assert not metrics.exists() or json.loads(metrics.read_text())["results"] == []


def test_a_sequential_run_stops_each_task_when_its_gate_is_decided(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """--benchmark-sequential: an unchanged run is HELD after 20 of its 40 episodes per task (no
    20-point drop: 0.8 ** 20 < 0.02), complete, not partial; a walker that loses the stroll's
    longer episodes is REGRESSED before its plan ends, and its test fails saying so; the test
    that runs the plan first (test_rollout here, not the gate's) stops it."""
    plan = ["--benchmark-episodes=40", "--benchmark-batch-size=1", "--benchmark-sync"]
    gated.makepyfile(test_gate=ROLLOUT_FIRST)
    run(gated, "--snapshot-update", *plan).assert_outcomes(passed=4)
    held = run(gated, *plan, "--benchmark-sequential", "--benchmark-metrics=held.json")
    held.assert_outcomes(passed=4)
    rows = {r["id"]: r for r in json.loads((gated.path / "held.json").read_text())["results"]}
    for row in rows.values():
        assert row["n_episodes"] == 20 and row["stopped"].startswith("HELD after 20 episodes")
    document = json.loads((gated.path / "held.json").read_text())
    assert document["run"]["partial"] is False and document["run"]["sequential"] is True
    held.stdout.fnmatch_lines(
        [
            "snapshot gate: 2 tasks compared (stat, *; 40 of 80 planned episodes used: 2 HELD): "
            "0 regressed*"
        ]
    )
    monkeypatch.setenv("TOY_STRIDE", "0.7")
    dropped = run(gated, *plan, "--benchmark-sequential", "--benchmark-metrics=drop.json")
    dropped.assert_outcomes(passed=3, failed=1)
    rows = {r["id"]: r for r in json.loads((gated.path / "drop.json").read_text())["results"]}
    stroll = rows["toy/stroll"]
    assert stroll["stopped"].startswith("REGRESSED after") and stroll["n_episodes"] < 40
    dropped.stdout.fnmatch_lines(
        ["*toy/stroll: 40/40 * → */*, sequential: REGRESSED after * episodes (* lost, 0 gained;"
         " drop e *, hold e *) → regression (if intended, *"]
    )  # fmt: skip
    # What it needs, in one line each: snapshots to judge against, the stat gate, one block.
    for args, needs in [
        (["--snapshot-update"], "--snapshot-update stores snapshots from whole runs: drop one"),
        (["--benchmark-gate=exact"], "--benchmark-gate is exact; use --benchmark-gate=stat"),
        (["--benchmark-episodes=2", "--benchmark-batch-size=4"],
         "the most a task runs (2 episodes) is less than one block"),
    ]:  # fmt: skip
        refused = run(gated, "--benchmark-sequential", *args)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stderr.fnmatch_lines([f"ERROR: --benchmark-sequential: *{needs}*"])


def test_a_simulator_that_changed_under_a_snapshot_is_said_beside_the_verdict(
    gated: pytest.Pytester,
):
    """A snapshot keeps the environment it ran in (packages, GPU, container; the renderer
    where images are rendered); the run block keeps the run's. A version that differs is said,
    not refused: a change that moves initial states is a refusal of its own."""
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    path = gated.path / SNAPS / "walk.json"
    stored = json.loads(path.read_text())
    packages = stored["fingerprint"]["packages"]
    assert (
        set(packages) >= {"numpy", "gymnasium", "torch"} and "renderer" not in stored["fingerprint"]
    )
    numpy = packages["numpy"]
    assert numpy is not None
    packages["numpy"] = "0.9"
    path.write_text(json.dumps(stored))
    result = run(gated, "--benchmark-gate=exact", "--benchmark-metrics=m.json")
    result.assert_outcomes(passed=2)
    metrics = json.loads((gated.path / "m.json").read_text())
    assert metrics["run"]["fingerprint"]["packages"]["numpy"] == numpy
    result.stdout.fnmatch_lines(
        [f"  environment: 1 task's snapshots ran in another environment (numpy 0.9 → {numpy})"]
    )


def test_a_task_a_sequential_run_stopped_is_complete_for_resume(gated: pytest.Pytester):
    """A stopped task is complete, not interrupted: --benchmark-resume keeps it (no episode
    runs again) and the run is not partial. (A plan of 30 holds against a 26-point drop,
    its smallest of interest: HELD after 15 unchanged pairs.)"""
    plan = ["--benchmark-episodes=30", "--benchmark-batch-size=1", "--benchmark-sync"]
    run(gated, "--snapshot-update", *plan).assert_outcomes(passed=2)
    args = [*plan, "--benchmark-sequential", "--benchmark-metrics=m.json"]
    run(gated, *args).assert_outcomes(passed=2)
    first = json.loads((gated.path / "m.json").read_text())
    again = run(gated, *args, "--benchmark-resume")
    again.assert_outcomes(passed=2)
    second = json.loads((gated.path / "m.json").read_text())
    assert second["run"]["partial"] is False
    assert [r["episodes"] for r in second["results"]] == [r["episodes"] for r in first["results"]]
    assert all(r["stopped"].startswith("HELD after 15") for r in second["results"])


def test_initial_states_that_moved_with_the_environment_are_named_and_judged_unpaired(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """A simulator upgrade moves initial states (episode 3 starts elsewhere) and the snapshot's
    fingerprint names another version: the change explains the move, so each task is judged
    unpaired (Fisher) with the change said, not refused; the same in a sequential run (its
    whole plan, no early stop on pairs that are not) and in ``compare``."""
    from pytest_benchmarks.cli import main

    plan = ["--benchmark-episodes=20", "--benchmark-batch-size=1", "--benchmark-sync"]
    run(gated, "--snapshot-update", *plan, "--benchmark-metrics=old.json").assert_outcomes(passed=2)
    for name in ("walk", "stroll"):
        path = gated.path / SNAPS / f"{name}.json"
        stored = json.loads(path.read_text())
        stored["fingerprint"]["packages"]["numpy"] = "0.9"
        path.write_text(json.dumps(stored))
    monkeypatch.setenv("TOY_MOVED", "3")
    result = run(gated, *plan, "--benchmark-metrics=new.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "  environment: 2 tasks' snapshots ran in another environment (numpy 0.9 → *)",
            "  environment: 2 tasks' initial states moved with it: judged unpaired (Fisher)",
        ]
    )
    sequential = run(gated, *plan, "--benchmark-sequential", "--benchmark-metrics=seq.json")
    sequential.assert_outcomes(passed=2)
    rows = json.loads((gated.path / "seq.json").read_text())["results"]
    assert [(r["n_episodes"], r.get("stopped")) for r in rows] == [(20, None), (20, None)]
    sequential.stdout.fnmatch_lines(
        ["  environment: 2 tasks' initial states moved with it: judged unpaired (Fisher)"]
    )
    # compare: the old run's recorded environment differs in the same way.
    old = json.loads((gated.path / "old.json").read_text())
    old["run"]["fingerprint"]["packages"]["numpy"] = "0.9"
    (gated.path / "old.json").write_text(json.dumps(old))
    capsys.readouterr()
    assert main(["compare", str(gated.path / "old.json"), str(gated.path / "new.json")]) == 0
    out = capsys.readouterr().out
    assert "note: the runs ran in another environment (numpy 0.9 → " in out
    assert re.search(
        r"toy/walk: 20/20 .* → 20/20 .*, Fisher p=1 >= .* → no significant change; initial "
        r"states moved with the environment \(from episode 3, numpy 0.9 → .*\): judged unpaired",
        out,
    ), out


def test_a_task_whose_environment_cannot_be_built_fails_each_test_in_one_line(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """An env that cannot be built (as Meta-World under a MuJoCo newer than it supports) fails
    each of the task's tests in one line naming the cause, never a traceback per test, and is
    the task's error in the metrics JSON."""
    gated.makepyfile(test_gate=ROLLOUT_FIRST)
    run(gated, "--snapshot-update").assert_outcomes(passed=4)
    monkeypatch.setenv("TOY_BUILD_ERROR", "1")
    result = run(gated, "--benchmark-metrics=m.json")
    result.assert_outcomes(failed=4)
    cause = "its environment cannot be built (ValueError: could not broadcast input array"
    result.stdout.fnmatch_lines([f"toy/walk: {cause}*", f"toy/stroll: {cause}*"])
    assert "Traceback" not in result.stdout.str() and "def __init__" not in result.stdout.str()
    rows = json.loads((gated.path / "m.json").read_text())["results"]
    assert all(cause in row["error"] for row in rows), rows


def test_a_fingerprint_that_is_no_object_of_strings_is_refused_and_values_are_clipped(
    gated: pytest.Pytester,
):
    """A snapshot's fingerprint is read at the boundary: one that is not an object of strings
    is refused naming the field; a version with an ANSI escape or a megabyte of text is said
    escaped and clipped, never printed raw."""
    from pytest_benchmarks.metrics.gate import environment_changes
    from pytest_benchmarks.metrics.snapshots import SnapshotFormatError, read

    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    path = gated.path / SNAPS / "walk.json"
    stored = json.loads(path.read_text())
    for bad, field in (({"packages": {"numpy": 3}}, "fingerprint/packages/numpy"),
                       ({"gpu": ["H100"]}, "fingerprint/gpu"), ("docker", "fingerprint")):  # fmt: skip
        with pytest.raises(SnapshotFormatError, match=f"not a task snapshot \\({field}: "):
            read(json.dumps({**stored, "fingerprint": bad}))
    hostile = {"packages": {"numpy": "\x1b[31mred\x1b[0m"}, "container": "x" * 10**6}
    said = environment_changes(hostile, {"packages": {"numpy": "2.0"}, "container": None})
    assert said == ["container xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… → None",
                    "numpy \\x1b[31mred\\x1b[0m → 2.0"]  # fmt: skip


def _edit(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    """A committed snapshot edited by hand (each episode through ``change``)."""
    doc = json.loads(path.read_text())
    for number, episode in enumerate(doc["episodes"]):
        change(number, episode)
    path.write_text(dumps(doc))


def test_a_pass_on_episodes_that_do_not_pair_or_are_unproven_says_so(gated: pytest.Pytester):
    """A pass that judged other episodes than it seems to says why beside its verdict: a
    snapshot whose seeds were shifted and a run with another seed pair no episode (judged
    unpaired: Fisher, less power), and a snapshot with half its digests removed leaves those
    episodes' starts unproven."""
    run(gated, "--snapshot-update").assert_outcomes(passed=2)
    stroll, walk = gated.path / SNAPS / "stroll.json", gated.path / SNAPS / "walk.json"
    _edit(stroll, lambda number, e: e.update(seed=e["seed"] + 1))
    _edit(walk, lambda number, e: number % 2 and e.pop("initial_digest"))
    result = run(gated)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "  note:      toy/stroll: 8/8 * → 8/8 *, Fisher p=1 >= * → no significant change; 8 of 8 "
        "episodes ran another seed or initial state than in the snapshot (episode 0: seed 1000, "
        "initial state 0; the snapshot seed 1001, initial state 0): not paired, judged as two "
        "unpaired samples",
        "  note:      toy/walk: 8/8 * → 8/8 *, McNemar p=1 >= * → no significant change; 4 of 8 "
        "paired episodes keep no initial-state digest in the snapshot: their starts are unproven",
        "snapshot gate: 2 tasks compared *→ no regression",
    ])  # fmt: skip
    run(gated, "--snapshot-update", "--benchmark-snapshot-replace").assert_outcomes(passed=2)
    seeded = run(gated, "--benchmark-seed=2000")
    seeded.assert_outcomes(passed=2)
    seeded.stdout.fnmatch_lines([
        "  note:      toy/stroll: *→ no significant change; the snapshot ran other settings "
        "(seed 1000 → 2000); 8 of 8 episodes ran another seed or initial state than in the "
        "snapshot (episode 0: seed 2000, initial state 0; the snapshot seed 1000, initial state "
        "0): not paired, judged as two unpaired samples",
    ])  # fmt: skip
    assert "note:" not in run(gated).stdout.str()
