"""``--benchmark-batched-inference``: LeRobot policies' slots at the same phase of their action
chunk share one ``select_action``. Each slot keeps its own episode state and its own noise, so
the actions are batch-of-one inference's up to float rounding; a run of it is repeatable, is
recorded in the run block and the snapshot's settings, and is never gated against a snapshot of
batch-of-one inference."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import read_metrics, run

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.policy_spec import Loading
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.metrics import snapshots
from pytest_benchmarks.metrics.gate import Incomparable, check_comparable
from pytest_benchmarks.policies import make_policy, slot_batch

pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

SIZE = 48
PIXELS = {"observation.state": (39,), "observation.images.corner2": (3, SIZE, SIZE)}
LEROBOT = {"observation.state": (4,), "observation.image": (3, SIZE, SIZE)}
SLOTS, STEPS, OUT_OF_PHASE = 4, 10, 3
TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate, snapshot):
    assert evaluate() == snapshot
"""


@pytest.fixture(scope="module")
def checkpoints(vlm_backbone: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ACT (chunked; and with temporal ensembling), Diffusion and SmolVLA on Meta-World."""
    root = tmp_path_factory.mktemp("batched")
    return {
        "act": lerobot_models.checkpoint("act", root / "act", PIXELS, action_dim=4),
        "act-ensemble": lerobot_models.checkpoint(
            "act",
            root / "ens",
            PIXELS,
            action_dim=4,
            n_action_steps=1,
            temporal_ensemble_coeff=0.01,
        ),
        "diffusion": lerobot_models.checkpoint("diffusion", root / "diffusion", PIXELS, 4),
        "smolvla": lerobot_models.checkpoint(
            "smolvla", root / "smolvla", LEROBOT, action_dim=4, vlm_model_name=str(vlm_backbone)
        ),
    }


def policy_steps(folder: Path, obs: str, batched: bool) -> tuple[np.ndarray, int]:
    """Actions (step, slot, action) of ``STEPS`` steps on one fixed random observation shared
    by every slot (seeds 1..4; slot 1 restarts at step ``OUT_OF_PHASE``), and the number of
    ``select_action`` calls."""
    benchmark = catalog.get("metaworld")
    task = benchmark.select(["reach-v3"])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=SLOTS, sync=True, seed=0, policy="random",
        max_steps=None, metrics=Path("m.json"), obs=obs, image_size=(SIZE, SIZE),
    ).env_config(task)  # fmt: skip
    policy: Any = make_policy(
        f"lerobot:{folder}", benchmark, config, SLOTS, Loading(batched_inference=batched)
    )
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (1, SIZE, SIZE, 3), dtype=np.uint8).repeat(SLOTS, 0)
    batch = {"task": ["reach the goal"] * SLOTS}
    if obs == "pixels":
        batch["observation.images.corner2"] = image
        batch["observation.state"] = rng.normal(size=(1, 39)).astype(np.float32).repeat(SLOTS, 0)
    else:
        batch["observation.image"] = image
        batch["observation.state"] = rng.normal(size=(1, 4)).astype(np.float32).repeat(SLOTS, 0)
    calls = 0
    select = policy.policy.select_action

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return select(*args, **kwargs)

    policy.policy.select_action = counted
    policy.reset(range(SLOTS), [1, 2, 3, 4])
    actions = []
    for step in range(STEPS):
        if step == OUT_OF_PHASE:
            policy.reset([1], [5])
        policy.act(batch)
        actions.append(policy.last_raw.copy())
    return np.stack(actions), calls


@pytest.mark.parametrize(
    ("kind", "obs", "batched_calls"),
    [
        # All four slots in phase for three steps, then slot 1 on its own: two calls a step.
        ("act", "pixels", OUT_OF_PHASE + 2 * (STEPS - OUT_OF_PHASE)),
        ("smolvla", "lerobot", OUT_OF_PHASE + 2 * (STEPS - OUT_OF_PHASE)),
        # A temporal ensembler is not a batch-of-one tree: every slot acts alone, as without.
        ("act-ensemble", "pixels", SLOTS * STEPS),
    ],
)
def test_slots_in_phase_share_a_call_and_act_as_they_do_alone(
    checkpoints: dict[str, Path], kind: str, obs: str, batched_calls: int
):
    alone, alone_calls = policy_steps(checkpoints[kind], obs, batched=False)
    together, calls = policy_steps(checkpoints[kind], obs, batched=True)
    assert alone_calls == SLOTS * STEPS
    assert calls == batched_calls
    # Float rounding of batched matrix products only: a slot given another slot's state,
    # queue or noise would be off by the actions' own scale.
    assert np.abs(together - alone).max() < 1e-5
    if kind == "smolvla":
        # Same observation, other seeds: the slots' noise (and so actions) differ.
        assert np.abs(alone[0, 0] - alone[0, 2]).max() > 1e-2
    if kind == "act-ensemble":
        assert np.array_equal(together, alone)


def test_merge_and_split_give_each_slot_its_own_state_back():
    states = [
        {"_queues": {"action": deque([torch.full((1, 2), float(s))] * 3, 4)}} for s in range(3)
    ]
    phases = [slot_batch.phase(s) for s in states]
    assert phases[0] == phases[1] == phases[2] is not None
    merged = slot_batch.merge(states)
    assert merged["_queues"]["action"][0].shape == (3, 2)
    back = slot_batch.split(merged, 3)
    for slot, state in enumerate(back):
        assert [t.tolist() for t in state["_queues"]["action"]] == [[[float(slot)] * 2]] * 3
    shorter = {"_queues": {"action": deque([torch.zeros(1, 2)], 4)}}
    assert slot_batch.phase(shorter) != phases[0]
    assert slot_batch.groups([phases[0], None, slot_batch.phase(shorter), phases[0]]) == [
        [0, 3], [1], [2]
    ]  # fmt: skip
    with pytest.raises(slot_batch.Unmergeable):
        slot_batch.merge([states[0], shorter])
    with pytest.raises(slot_batch.Unmergeable, match=r"tensors of shapes \[\(1, 2\), \(1, 3\)\]"):
        slot_batch.merge([torch.zeros(1, 2), torch.zeros(1, 3)])


RUN = {"tasks": ["reach-v3"], "episodes": 4, "max_steps": 10, "obs": "pixels",
       "image_size": SIZE, "device": "cpu", "sync": True}  # fmt: skip


def records(run: Any) -> list[tuple]:
    return [e.outcome() for r in run.results for e in r.episodes]


@pytest.mark.parametrize("kind", ["act", "diffusion"])
def test_a_batched_run_is_repeatable_and_says_so(
    checkpoints: dict[str, Path], kind: str, tmp_path: Path
):
    # Diffusion samples its noise inside the call: batched, its records are the batch's own
    # (not batch-of-one's), and still the same on every rerun.
    spec = f"lerobot:{checkpoints[kind]}"
    runs = [
        evaluate(
            "metaworld",
            spec,
            batch_size=4,
            batched_inference=True,
            metrics=tmp_path / f"{i}.json",
            **RUN,
        )
        for i in range(2)
    ]
    assert [r.error for run in runs for r in run.results] == [None, None]
    assert records(runs[0]) == records(runs[1])
    assert len({rec[5] for rec in records(runs[0])}) == RUN["episodes"]
    assert read_metrics(tmp_path / "0.json")["run"]["batched_inference"] is True


def act_session(
    pytester: pytest.Pytester, checkpoints: dict[str, Path], batch: str, *extra: str
) -> pytest.RunResult:
    """A session of the ACT checkpoint on reach-v3 at ``batch``, in this process: LeRobot is
    imported once for all of a test's sessions."""
    return pytester.runpytest(
        "-p", "no:cacheprovider", f"--benchmark-policy=lerobot:{checkpoints['act']}",
        "--benchmark-task=reach-v3", "--benchmark-episodes=2", "--benchmark-max-steps=4",
        "--benchmark-obs=pixels", f"--benchmark-image-size={SIZE}", "--benchmark-device=cpu",
        f"--benchmark-batch-size={batch}", *extra,
    )  # fmt: skip


def test_the_gate_never_judges_batched_runs_by_batch_of_one_snapshots(
    pytester: pytest.Pytester, checkpoints: dict[str, Path]
):
    pytester.makepyfile(test_mw=TESTS)

    def run(*extra: str) -> pytest.RunResult:
        return act_session(pytester, checkpoints, "2", *extra)

    run("--snapshot-update").assert_outcomes(passed=1)
    batched = run("--benchmark-batched-inference")
    batched.assert_outcomes(failed=1)
    batched.stdout.fnmatch_lines(
        ["*the snapshot and this run are different experiments (batched_inference False → "
         "True): runs that differ in --benchmark-batched-inference are not compared; run with "
         "the snapshot's settings, or store a new snapshot with --snapshot-update "
         "--benchmark-snapshot-replace*"]
    )  # fmt: skip
    kept = run("--benchmark-batched-inference", "--snapshot-update")
    kept.stdout.fnmatch_lines(["*snapshot kept: this run changed batched_inference False → True*"])
    # And the other way round.
    made_with = {"seed": 1000, "batched_inference": True}
    refusal = r"\(batched_inference True → False\): runs that differ in --benchmark-batched"
    snapshot = (snapshots.NAMES, snapshots.REMEDY, snapshots.ABSENT)
    with pytest.raises(Incomparable, match=refusal):
        check_comparable(made_with, {"seed": 1000}, *snapshot)
    assert check_comparable(made_with, made_with, *snapshot) == []


def test_a_batch_of_one_is_recorded_as_batch_of_one_inference(
    pytester: pytest.Pytester, checkpoints: dict[str, Path]
):
    """With one env per task no slots share a forward pass: the flag changes nothing, so the
    run block says batched_inference false and a batch-of-one snapshot judges the run."""
    pytester.makepyfile(test_mw=TESTS)

    def run(*extra: str) -> pytest.RunResult:
        return act_session(pytester, checkpoints, "1", *extra)

    run("--snapshot-update").assert_outcomes(passed=1)
    run("--benchmark-batched-inference", "--benchmark-metrics=one.json").assert_outcomes(passed=1)
    assert read_metrics(pytester.path / "one.json")["run"]["batched_inference"] is False


def test_other_policies_refuse_the_flag_in_one_line(pytester: pytest.Pytester):
    pytester.makepyfile(test_mw=TESTS)
    result = run(pytester, "--benchmark-batched-inference", "--benchmark-task=reach-v3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --benchmark-batched-inference: only lerobot: policies share forward passes "
         "across slots (--benchmark-policy is scripted); drop the flag or use a lerobot: policy"]
    )  # fmt: skip
