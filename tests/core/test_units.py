"""Plain functions: selection, planning, statistics, metrics writing, batch sizing, scheduling."""

from __future__ import annotations

import json
import math
from pathlib import Path

import metaworld.env_dict
import numpy as np
import pytest
from scipy.stats import binomtest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.files import check_writable
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult, wilson_interval
from pytest_benchmarks.core.tasks import SelectionError
from pytest_benchmarks.engine.vector import auto_batch_size
from pytest_benchmarks.metrics.document import build_metrics
from pytest_benchmarks.metrics.document import write_metrics as write_atomic


@pytest.mark.parametrize(
    ("k", "n"), [(0, 1), (1, 1), (3, 10), (48, 50), (0, 50), (50, 50), (7, 13)]
)
def test_wilson_matches_scipy(k, n):
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(k, n)
    assert math.isclose(low, 100 * ci.low, abs_tol=1e-9)
    assert math.isclose(high, 100 * ci.high, abs_tol=1e-9)


def test_metaworld_tasks_match_the_installed_package():
    mw = catalog.get("metaworld")
    assert [t.task for t in mw.tasks()] == list(metaworld.env_dict.ALL_V3_ENVIRONMENTS)
    assert mw.groups()["MT10"] == list(metaworld.env_dict.MT10_V3)
    assert all(t.description.endswith(".") for t in mw.tasks())


def test_selection_spellings_groups_and_order():
    mw = catalog.get("metaworld")
    assert [t.id for t in mw.select(["metaworld-push-v3", "metaworld/reach-v3", "push-v3"])] == [
        "metaworld/push-v3",
        "metaworld/reach-v3",
    ]
    assert len(mw.select(["MT10", "reach-v3"])) == 10
    assert len(mw.select(["MT50"])) == 50
    with pytest.raises(
        SelectionError,
        match=r"unknown metaworld task or group 'pussh-v3' \(did you mean push-v3 or push-wall-v3 or push-back-v3\?\); valid groups: MT10, MT50; valid tasks: assembly-v3, ",
    ):
        mw.select(["pussh-v3"])
    with pytest.raises(SelectionError, match=r"unknown benchmark 'nope'; valid: (.*, )?metaworld"):
        catalog.get("nope")


def test_episode_plan_depends_on_seed_and_index_only():
    mw = catalog.get("metaworld")
    task = mw.select(["push-v3"])[0]
    plan = plan_episodes(mw, task, 7, [0, 1, 49, 50, 123])
    assert [(e.index, e.seed, e.init_state) for e in plan] == [
        (0, 7, 0),
        (1, 8, 1),
        (49, 56, 49),
        (50, 57, 0),
        (123, 130, 23),
    ]
    assert plan_episodes(mw, task, 7, [123]) == plan[-1:]


@pytest.mark.parametrize(
    ("episodes", "workers", "cpus", "expected"),
    [(10, 1, 2, 1), (10, 1, 8, 5), (10, 2, 8, 2), (3, 1, 64, 3), (500, 1, 200, 64), (10, 8, 2, 1)],
)
def test_auto_batch_size(episodes, workers, cpus, expected):
    assert auto_batch_size(episodes, workers, cpus) == expected


def _result(successes: list[bool], error: str | None = None) -> TaskResult:
    task = catalog.get("metaworld").select(["push-v3"])[0]
    episodes = [
        EpisodeRecord(i, 100 + i, i, s, 10 + i, 1.5 * i, 0.5, 0.01) for i, s in enumerate(successes)
    ]
    return TaskResult(
        task,
        episodes,
        eval_s=2.0,
        batch_size=2,
        planned=4,
        error=error,
        policy={"source": "scripted", "id": "x", "revision": "1"},
    )


def test_task_result_row_round_trip_and_aggregates():
    result = _result([True, False, True])
    row = result.to_row()
    assert row["successes"] == 2 and row["n_episodes"] == 3 and row["planned_episodes"] == 4
    assert row["pc_success"] == pytest.approx(200 / 3)
    assert row["avg_steps"] == 11 and row["eval_ep_s"] == pytest.approx(2 / 3)
    assert result.partial
    back = TaskResult.from_row(json.loads(json.dumps(row)))
    assert back.to_row() == row


def test_metrics_document_validates_and_aggregates(tmp_path):
    import jsonschema

    from pytest_benchmarks.metrics.document import schema

    document = build_metrics(
        [_result([True, True]), _result([], error="ValueError: boom")], _run(), "scripted"
    )
    jsonschema.validate(document, schema())
    assert document["overall"]["n_episodes"] == 2 and document["overall"]["n_errors"] == 1
    assert document["policy"] == {
        "spec": "scripted",
        "source": "scripted",
        "id": "x",
        "revision": "1",
    }


def _run() -> dict:
    return {
        "args": [], "seed": 0, "episodes": 2, "batch_size": 0, "workers": 0, "sync": False,
        "policy": "scripted", "max_steps": None, "git_commit": None, "host": "h", "python": "3",
        "packages": {}, "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00", "duration_s": 1.0, "partial": False,
        "exitstatus": 0,
    }  # fmt: skip


def test_atomic_write_replaces_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "deep" / "metrics.json"
    write_atomic(path, {"a": 1})
    write_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == ["metrics.json"]
    with pytest.raises(ValueError):
        write_atomic(path, {"a": float("nan")})  # not valid JSON: refused, old file kept
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == ["metrics.json"]


def test_check_writable(tmp_path):
    check_writable(tmp_path / "new" / "dir" / "m.json")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError, match="file is not a directory"):
        check_writable(tmp_path / "file" / "m.json")
    # root may write almost anywhere: only an attempt sees that /proc takes no new files.
    with pytest.raises(OSError, match="directory /proc is not writable"):
        check_writable(Path("/proc/m.json"))
    with pytest.raises(OSError, match="is a directory"):
        check_writable(tmp_path)


def test_task_scheduling_groups_by_task(pytester):
    from pytest_benchmarks.plugin.scheduling import TaskScheduling

    config = pytester.parseconfig("--tx=2*popen")
    scheduler = TaskScheduling(config, None, ["a/x", "a/x-y", "metaworld/push-v3"])
    scope = scheduler._split_scope
    assert scope("t.py::test_a[metaworld/push-v3]") == "metaworld/push-v3"
    assert scope("u.py::test_b[metaworld/push-v3]") == "metaworld/push-v3"
    assert scope("t.py::test_a[metaworld/push-v3-slow]") == "metaworld/push-v3"
    assert scope("t.py::test_a[1-a/x-y]") == "a/x-y"
    assert scope("t.py::test_a[a/x-y]") == "a/x-y"
    assert scope("t.py::test_a[a/x]") == "a/x"
    assert scope("t.py::test_plain") == "t.py::test_plain"
    assert scope("t.py::test_p[metaworld/push-v30]") == "t.py::test_p[metaworld/push-v30]"


def test_rollout_checks_name_what_broke():
    from pytest_benchmarks import check_rollout, check_success_rate
    from pytest_benchmarks.core.tasks import EnvConfig

    mw = catalog.get("metaworld")
    task = mw.select(["push-v3"])[0]
    config = EnvConfig(task, 20, 0)
    processors = mw.processors(config)
    good = _result([True, False, True, True])
    check_rollout(good, config, processors)
    with pytest.raises(AssertionError, match=r"metaworld/push-v3: ValueError: boom"):
        check_rollout(_result([True], error="ValueError: boom"), config, processors)
    with pytest.raises(AssertionError, match=r"metaworld/push-v3: 3/4 ran"):
        check_rollout(_result([True] * 3), config, processors)
    with pytest.raises(AssertionError, match=r"episode 3 ran 13 steps"):
        check_rollout(good, EnvConfig(task, 12, 0), processors)
    with pytest.raises(AssertionError, match=r"metaworld/push-v3: 0/2 episodes succeeded"):
        check_success_rate(_result([False, False]))


def test_action_check_names_what_is_wrong_with_the_actions():
    import gymnasium as gym

    from pytest_benchmarks.engine.rollout import ActionCheck

    check = ActionCheck(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), 1)
    assert check(np.zeros((1, 4), np.float32)) is None
    assert check([[0.0] * 4]) == "actions are a list, expected a numpy array of shape [1, 4]"
    assert check(np.zeros((1, 4), np.complex64)) == (
        "actions have dtype complex64, expected real numbers (float)"
    )
    for dtype in (np.bool_, object, "<U3"):
        assert "expected real numbers" in str(check(np.zeros((1, 4), dtype)))
    assert check(np.zeros((2, 4))) == "actions have shape [2, 4], expected [1, 4]"
    assert check(np.full((1, 4), np.nan)) == "actions hold NaN or inf"
    assert check(np.full((1, 4), 2.0)) == "actions leave the action space [-1.0, 1.0]"
    assert check(np.array([[0.0, -np.inf, 0.0, 0.0]])) == "actions hold NaN or inf"
    # Bounds that differ per dimension, and unbounded dimensions (where inf is inside).
    uneven = ActionCheck(gym.spaces.Box(np.array([-1, 0]), np.array([1, 2]), dtype=np.float32), 1)
    assert uneven(np.array([[-1.0, 2.0]])) is None
    assert uneven(np.array([[-1.0, 2.5]])) == "actions leave the action space [-1.0, 2.0]"
    assert uneven(np.array([[np.nan, 1.0]])) == "actions hold NaN or inf"
    free = ActionCheck(gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), 1)
    assert free(np.array([[1e30, -1e30]])) is None
    assert free(np.array([[np.inf, 0.0]])) == "actions hold NaN or inf"
    assert free(np.array([[np.nan, 0.0]])) == "actions hold NaN or inf"
