"""SmolVLA through ``lerobot:DIR``, offline: a tiny backbone built here (SmolVLM2's real
processor classes, a local tokenizer), a SmolVLA checkpoint with random weights saved with its
processors (tokenizer step included), evaluated on LIBERO (two cameras, state, language) and
Meta-World. The task description reaches the tokenizer for every slot, records do not depend on
the batch size, and the backbone is resolved like the checkpoint and is part of its identity."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import hub_cache, read_metrics, run

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.policies import make_policy

pytest.importorskip("lerobot.policies.smolvla", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

SIZE = 64
LIBERO_INPUTS = {"observation.state": (8,), "observation.images.image": (3, SIZE, SIZE),
                 "observation.images.image2": (3, SIZE, SIZE)}  # fmt: skip
MW_INPUTS = {"observation.state": (4,), "observation.image": (3, SIZE, SIZE)}
TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().error is None
"""


@pytest.fixture(scope="module")
def libero_smolvla(vlm_backbone: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("smolvla-libero")
    return lerobot_models.checkpoint(
        "smolvla", folder, LIBERO_INPUTS, action_dim=7, vlm_model_name=str(vlm_backbone)
    )


@pytest.fixture(scope="module")
def metaworld_smolvla(vlm_backbone: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("smolvla-metaworld")
    return lerobot_models.checkpoint(
        "smolvla", folder, MW_INPUTS, action_dim=4, vlm_model_name=str(vlm_backbone)
    )


def records(run: object) -> list[tuple]:
    return [e.outcome() for r in run.results for e in r.episodes]  # type: ignore[attr-defined]


def test_metaworld_records_are_the_same_at_batch_1_2_and_4_and_on_rerun(metaworld_smolvla: Path):
    # Three separate runs in one process: equal records are also equal reruns.
    run = {"tasks": ["reach-v3"], "episodes": 4, "max_steps": 8, "image_size": SIZE,
           "device": "cpu"}  # fmt: skip
    spec = f"lerobot:{metaworld_smolvla}"
    runs = {b: evaluate("metaworld", spec, batch_size=b, **run) for b in (1, 2, 4)}
    for result in runs.values():
        assert [r.error for r in result.results] == [None]
    assert records(runs[1]) == records(runs[2]) == records(runs[4])
    # The episodes differ from one another: the check compares real trajectories.
    assert len({rec[5] for rec in records(runs[1])}) == 4


def test_every_slot_tokenizes_its_own_task_description(libero_smolvla: Path, vlm_backbone: Path):
    from transformers import AutoTokenizer

    benchmark = catalog.get("libero")
    task = benchmark.select(["libero_spatial/0"])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=2, sync=True, seed=0,
        policy=f"lerobot:{libero_smolvla}", max_steps=4, metrics=Path("m.json"),
        image_size=(SIZE, SIZE),
    ).env_config(task)  # fmt: skip
    features = benchmark.processors(config).features
    policy = make_policy(f"lerobot:{libero_smolvla}", benchmark, config, 2, "cpu", features)
    rng = np.random.default_rng(0)
    batch = {
        "observation.images.image": rng.integers(0, 255, (2, SIZE, SIZE, 3), dtype=np.uint8),
        "observation.images.image2": rng.integers(0, 255, (2, SIZE, SIZE, 3), dtype=np.uint8),
        "observation.state": rng.normal(size=(2, 8)).astype(np.float32),
        "task": ["pick up the black bowl", "open the top drawer"],
    }
    tokenizer = AutoTokenizer.from_pretrained(vlm_backbone)
    for slot, description in enumerate(batch["task"]):
        seen = policy.preprocessor(policy.observation(batch, slot))  # type: ignore[attr-defined]
        tokens = seen["observation.language.tokens"][0]
        mask = seen["observation.language.attention_mask"][0].bool()
        # SmolVLA's pre-processor ends the description with a newline before tokenizing.
        assert tokens[mask].tolist() == tokenizer(description + "\n")["input_ids"]
    assert policy.act(batch).shape == (2, 7)


def test_metaworld_under_xdist_records_the_backbone(
    pytester: pytest.Pytester, metaworld_smolvla: Path, vlm_backbone: Path, tmp_path: Path
):
    folder = metaworld_smolvla
    pytester.makepyfile(test_mw=TESTS)
    metrics = tmp_path / "m.json"
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", f"--benchmark-policy=lerobot:{folder}",
        "--benchmark-task=reach-v3,push-v3", "--benchmark-episodes=2",
        "--benchmark-max-steps=6", f"--benchmark-image-size={SIZE}",
        f"--benchmark-metrics={metrics}",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    document = read_metrics(metrics)
    identities = [row["policy"] for row in document["results"]]
    assert len(identities) == 2 and identities[0] == identities[1]
    assert identities[0]["backbone"].startswith(f"{vlm_backbone.resolve()}#")
    assert document["policy"]["backbone"] == identities[0]["backbone"]
    assert [row["device"] for row in document["results"]] == ["cpu", "cpu"]


def named_backbone(checkpoint: Path, folder: Path, name: str) -> Path:
    """A copy of ``checkpoint`` that names its backbone ``name``, as a Hub checkpoint does."""
    shutil.copytree(checkpoint, folder)
    config = json.loads((folder / "config.json").read_text())
    config["vlm_model_name"] = name
    (folder / "config.json").write_text(json.dumps(config))
    pre = json.loads((folder / "policy_preprocessor.json").read_text())
    for step in pre["steps"]:
        if step["registry_name"] == "tokenizer_processor":
            step["config"]["tokenizer_name"] = name
    (folder / "policy_preprocessor.json").write_text(json.dumps(pre))
    return folder


def test_the_backbone_resolves_offline_from_the_hub_cache_or_fails_in_one_line(
    pytester: pytest.Pytester,
    metaworld_smolvla: Path,
    vlm_backbone: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    commit = "0123456789abcdef0123456789abcdef01234567"
    hub_cache(tmp_path / "hub", "my-org/tiny-vlm", vlm_backbone, commit)
    # The sessions run in this process (LeRobot imported once), under HF_HUB_CACHE and
    # HF_HUB_OFFLINE=1 as huggingface_hub read them at its import.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    pytester.makepyfile(test_mw=TESTS)
    run = ["-p", "no:cacheprovider", "--benchmark-task=reach-v3", "--benchmark-episodes=1",
           "--benchmark-max-steps=4", f"--benchmark-image-size={SIZE}"]  # fmt: skip

    found = named_backbone(metaworld_smolvla, tmp_path / "found", "my-org/tiny-vlm")
    metrics = tmp_path / "m.json"
    result = pytester.runpytest(
        *run, f"--benchmark-policy=lerobot:{found}", f"--benchmark-metrics={metrics}"
    )
    result.assert_outcomes(passed=1)
    identity = read_metrics(metrics)["results"][0]["policy"]
    assert identity["backbone"] == f"my-org/tiny-vlm@{commit}"

    absent = named_backbone(metaworld_smolvla, tmp_path / "absent", "my-org/absent-vlm")
    result = pytester.runpytest(*run, f"--benchmark-policy=lerobot:{absent}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*lerobot:{absent}: its backbone (vlm_model_name) my-org/absent-vlm: not in the "
         "local Hub cache*"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str()


LIBERO_SEED = """
import pytest

pytestmark = pytest.mark.benchmark_env("libero")

def test_rollout(evaluate):
    assert evaluate().error is None
"""


@pytest.mark.e2e  # LeRobot's CI commands, run whole as written
@pytest.mark.parametrize("seed", ["libero", "metaworld"])
def test_the_lerobot_ci_evaluation_commands_run_as_written(
    pytester: pytest.Pytester, vlm_backbone: Path, tmp_path: Path, seed: str
):
    """LeRobot's benchmark CI evaluates SmolVLA with cameras named camera1/camera2, LeRobot's
    JSON maps and empty cameras (1 on LIBERO, 2 on Meta-World). A checkpoint whose config asks
    for exactly those features runs with the documented equivalent flags, the JSON pasted as
    written, and its image size taken from its config: on LIBERO, two cameras, the state and
    the task's language."""
    cameras = ["camera1", "camera2"] if seed == "libero" else ["camera1"]
    inputs = {"observation.state": (8,) if seed == "libero" else (4,)}
    inputs |= {f"observation.images.{c}": (3, SIZE, SIZE) for c in cameras}
    folder = lerobot_models.checkpoint(
        "smolvla", tmp_path / seed, inputs, action_dim=7 if seed == "libero" else 4,
        vlm_model_name=str(vlm_backbone), empty_cameras=3 - len(cameras),
    )  # fmt: skip
    if seed == "libero":
        pytester.makepyfile(test_seed=LIBERO_SEED)
        flags = ["--benchmark-task=libero_spatial/0", "--benchmark-camera-map="
                 '{"agentview_image": "camera1", "robot0_eye_in_hand_image": "camera2"}']  # fmt: skip
    else:
        pytester.makepyfile(test_seed=TESTS)
        flags = ["--benchmark-task=push-v3",
                 '--benchmark-rename-map={"observation.image": "observation.images.camera1"}']  # fmt: skip
    metrics = tmp_path / "m.json"
    result = run(
        pytester, f"--benchmark-policy=lerobot:{folder}", *flags,
        "--benchmark-episodes=1", "--benchmark-max-steps=4", f"--benchmark-metrics={metrics}",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"image size {SIZE}x{SIZE} from lerobot:{folder}'s config.json ({len(cameras)} camera*"]
    )
    document = read_metrics(metrics)
    assert document["run"]["image_size"] == [SIZE, SIZE]
    row = document["results"][0]
    assert row["error"] is None and [e["steps"] for e in row["episodes"]] == [4]
    assert row["policy"]["id"] == str(folder.resolve())
    assert row["policy"]["backbone"].startswith(f"{vlm_backbone.resolve()}#")


def test_cameras_read_through_a_rename_map_are_rendered(vlm_backbone: Path, tmp_path: Path):
    """LIBERO renders black the cameras a policy does not read: a policy reading them through
    --benchmark-rename-map reads them by the env's names."""
    from pytest_benchmarks.engine.vector import LazyVectorEnv

    inputs = {"observation.state": (8,), "observation.images.camera1": (3, SIZE, SIZE),
              "observation.images.camera2": (3, SIZE, SIZE)}  # fmt: skip
    folder = lerobot_models.checkpoint(
        "smolvla", tmp_path / "renamed", inputs, action_dim=7, vlm_model_name=str(vlm_backbone)
    )
    benchmark = catalog.get("libero")
    task = benchmark.select(["libero_spatial/0"])[0]
    renames = {"observation.images.image": "observation.images.camera1",
               "observation.images.image2": "observation.images.camera2"}  # fmt: skip
    settings = Settings(
        envs=None, tasks=None, episodes=1, batch_size=1, sync=True, seed=0,
        policy=f"lerobot:{folder}", max_steps=4, metrics=Path("m.json"),
        image_size=(SIZE, SIZE), rename_map=tuple(renames.items()),
    )  # fmt: skip
    config = settings.env_config(task)
    features = benchmark.processors(config).features
    policy = make_policy(f"lerobot:{folder}", benchmark, config, 1, settings.loading, features)
    assert set(renames) <= set(policy.input_features)  # type: ignore[attr-defined]
    env = LazyVectorEnv(benchmark, config, 1, sync=True)
    env.skip_unread_cameras(policy)
    assert env.config.blank_cameras == ()


def test_with_none_of_its_cameras_in_the_env_the_feature_diff_says_so(
    vlm_backbone: Path, tmp_path: Path
):
    """SmolVLA fills missing cameras itself, but only beside one the env gives: with none,
    the feature check names them (LeRobot would fail at the first step instead)."""
    from pytest_benchmarks.core.features import FeatureMismatch

    inputs = {"observation.state": (39,), "observation.images.camera1": (3, SIZE, SIZE)}
    folder = lerobot_models.checkpoint(
        "smolvla", tmp_path / "cam", inputs, action_dim=4, vlm_model_name=str(vlm_backbone)
    )
    benchmark = catalog.get("metaworld")
    task = benchmark.select(["reach-v3"])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=1, sync=True, seed=0,
        policy=f"lerobot:{folder}", max_steps=4, metrics=Path("m.json"), obs="pixels",
        image_size=(SIZE, SIZE),
    ).env_config(task)  # fmt: skip
    features = benchmark.processors(config).features  # observation.images.corner2, state
    with pytest.raises(FeatureMismatch) as mismatch:
        make_policy(f"lerobot:{folder}", benchmark, config, 1, "cpu", features)
    assert f"- observation.images.camera1 [3, {SIZE}, {SIZE}]: the env does not provide it" in str(
        mismatch.value
    )
