"""LeRobot checkpoints (ACT, Diffusion Policy) built here with random weights and saved with
their processors, evaluated through ``lerobot:DIR`` on Meta-World and LIBERO pixels: LeRobot's
own preprocessing and processors, per-slot queues and seeds (records independent of batch size
and worker count), the feature check, and one-line load errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch._dynamo
from helpers import hub_cache, offline_hub, outcomes, read_metrics

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.policy_spec import Loading
from pytest_benchmarks.core.validation import OptionError
from pytest_benchmarks.policies import make_policy
from pytest_benchmarks.policies.hub import PolicySourceError

pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")

import lerobot_models

lerobot_models.preload()

IMAGE = 48
MW_INPUTS = {"observation.state": (39,), "observation.images.corner2": (3, IMAGE, IMAGE)}
RUN = {"tasks": ["reach-v3"], "episodes": 4, "max_steps": 10, "obs": "pixels",
       "image_size": IMAGE, "device": "cpu"}  # fmt: skip
TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().error is None
"""


@pytest.fixture(scope="module", params=lerobot_models.KINDS)
def checkpoint(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp(request.param)
    return lerobot_models.checkpoint(request.param, folder, MW_INPUTS, action_dim=4)


def records(run: object) -> list[tuple]:
    return [e.outcome() for r in run.results for e in r.episodes]  # type: ignore[attr-defined]


def test_records_are_the_same_at_every_batch_size_and_on_rerun(checkpoint: Path):
    # Three separate runs in one process: equal records are also equal reruns.
    runs = {
        b: evaluate("metaworld", f"lerobot:{checkpoint}", batch_size=b, **RUN) for b in (1, 2, 4)
    }
    for run in runs.values():
        assert [r.error for r in run.results] == [None]
    assert records(runs[1]) == records(runs[2]) == records(runs[4])
    # The episodes differ from one another: the check compares real trajectories.
    assert len({rec[5] for rec in records(runs[1])}) == RUN["episodes"]
    policy = runs[1].results[0].policy
    assert policy["source"] == "lerobot" and policy["id"] == str(checkpoint.resolve())
    assert policy["revision"] and len(policy["revision"]) >= 12


def test_pytest_with_two_workers_gives_the_api_records(pytester: pytest.Pytester, tmp_path: Path):
    folder = lerobot_models.checkpoint("act", tmp_path / "act", MW_INPUTS, action_dim=4, seed=3)
    api = evaluate("metaworld", f"lerobot:{folder}", batch_size=1,
                   **{**RUN, "tasks": ["reach-v3", "push-v3"], "episodes": 2})  # fmt: skip
    pytester.makepyfile(test_mw=TESTS)
    metrics = tmp_path / "m.json"
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", f"--benchmark-policy=lerobot:{folder}",
        "--benchmark-task=reach-v3,push-v3", "--benchmark-episodes=2", "--benchmark-max-steps=10",
        "--benchmark-obs=pixels", f"--benchmark-image-size={IMAGE}", "--benchmark-device=cpu",
        f"--benchmark-metrics={metrics}",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    assert outcomes(read_metrics(metrics)) == outcomes(api.metrics)


def lerobot_action(folder: Path, observation: dict, with_processors: bool) -> np.ndarray:
    """One action by LeRobot's own code: its policy class, processors and preprocessing."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.utils import preprocess_observation
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors

    config = PreTrainedConfig.from_pretrained(folder)
    policy = get_policy_class(config.type).from_pretrained(folder, config=config).eval()
    policy.reset()
    batch = preprocess_observation(observation)
    batch["task"] = ["reach"]
    torch.manual_seed(7)
    if not with_processors:
        return policy.select_action(batch).numpy()
    pre, post = make_pre_post_processors(config, pretrained_path=str(folder))
    return post(policy.select_action(pre(batch))).numpy()


def reach_pixels() -> tuple[Any, Any]:
    """Meta-World and reach-v3's env config with pixels at the test checkpoints' image size."""
    from pytest_benchmarks.core.settings import Settings

    benchmark = catalog.get("metaworld")
    task = benchmark.select(["reach-v3"])[0]
    config = Settings(
        envs=None, tasks=None, episodes=1, batch_size=1, sync=True, seed=0, policy="random",
        max_steps=None, metrics=Path("m.json"), obs="pixels", image_size=(IMAGE, IMAGE),
    ).env_config(task)  # fmt: skip
    return benchmark, config


def test_actions_go_through_the_checkpoint_processors(checkpoint: Path):
    benchmark, config = reach_pixels()
    policy = make_policy(f"lerobot:{checkpoint}", benchmark, config, 1, "cpu")
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (1, IMAGE, IMAGE, 3), dtype=np.uint8)
    state = rng.normal(size=(1, 39)).astype(np.float32)
    batch = {"observation.state": state, "observation.images.corner2": image, "task": ["reach"]}
    policy.reset([0], [7])
    policy.act(batch)
    ours = policy.last_raw  # type: ignore[attr-defined]
    raw = {"pixels": {"corner2": image}, "agent_pos": state}
    assert np.array_equal(ours, lerobot_action(checkpoint, raw, with_processors=True))
    unprocessed = lerobot_action(checkpoint, raw, with_processors=False)
    assert np.abs(ours - unprocessed).max() > 1e-3


def run_policy(
    pytester: pytest.Pytester,
    folder: Path | str,
    *extra: str,
    size: int | None = IMAGE,
) -> pytest.RunResult:
    """One Meta-World reach-v3 episode of 4 steps, in this process (LeRobot, torch and
    transformers imported once for every run, about 13 s each otherwise); ``size`` None: no
    --benchmark-image-size. What reads the environment at import (huggingface_hub's HF_HUB_*
    variables) is set as the import read it (helpers.offline_hub)."""
    pytester.makepyfile(test_mw=TESTS)
    sized = [f"--benchmark-image-size={size}"] if size is not None else []
    return pytester.runpytest(
        "-p", "no:cacheprovider", f"--benchmark-policy=lerobot:{folder}",
        "--benchmark-task=reach-v3", "--benchmark-episodes=1", "--benchmark-max-steps=4",
        "--benchmark-device=cpu", *sized, *extra,
    )  # fmt: skip


def test_a_policy_that_does_not_fit_the_env_gets_the_feature_diff(
    pytester: pytest.Pytester, tmp_path: Path
):
    folder = lerobot_models.checkpoint(
        "act", tmp_path / "act", {"observation.state": (8,), "observation.images.top": (3, 32, 32)},
        action_dim=4,
    )  # fmt: skip
    result = run_policy(pytester, folder)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*lerobot:{folder.resolve()} does not fit metaworld/reach-v3:",
        "*~ observation.state: the policy wants [[]8], the env gives [[]4]",
        "*- observation.images.top [[]3, 32, 32]: the env does not provide it",
    ])  # fmt: skip
    assert "Traceback" not in result.stdout.str()


def test_lerobot_policies_get_lerobots_layout_unless_asked_otherwise(
    pytester: pytest.Pytester, tmp_path: Path
):
    """A checkpoint in LeRobot's Meta-World layout runs with no layout flags; with the project's
    own pixels layout the same checkpoint gets the diff."""
    inputs = {"observation.state": (4,), "observation.image": (3, IMAGE, IMAGE)}
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=4)
    run_policy(pytester, folder).assert_outcomes(passed=1)
    own = run_policy(pytester, folder, "--benchmark-obs=pixels")
    own.assert_outcomes(failed=1)
    own.stdout.fnmatch_lines(["*- observation.image [[]3, 48, 48]: the env does not provide it"])


def test_the_image_size_the_checkpoint_declares_is_the_default(
    pytester: pytest.Pytester, tmp_path: Path
):
    inputs = {"observation.state": (39,), "observation.images.corner2": (3, 40, 40),
              "observation.images.wrist": (3, 40, 40)}  # fmt: skip
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=4)
    metrics = tmp_path / "m.json"
    pixels = "--benchmark-obs=pixels"
    result = run_policy(pytester, folder, pixels, f"--benchmark-metrics={metrics}", size=None)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"image size 40x40 from lerobot:{folder}'s config.json (2 cameras); "
         "--benchmark-image-size overrides it"]
    )  # fmt: skip
    assert read_metrics(metrics)["run"]["image_size"] == [40, 40]
    # An explicit size still wins (and here does not fit).
    explicit = run_policy(pytester, folder, pixels, size=32)
    explicit.assert_outcomes(failed=1)
    explicit.stdout.fnmatch_lines(
        [
            "*~ observation.images.corner2: the policy wants [[]3, 40, 40], the env gives [[]3, 32, 32]"
        ]
    )
    assert "image size 40x40" not in explicit.stdout.str()


def test_a_hub_checkpoints_declared_image_size_needs_only_its_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The size comes from the checkpoint's config.json through huggingface_hub (the cache, or
    the Hub when it can be reached), so a run gets the same size before and after the
    checkpoint was cached whole; when not even config.json can be had (offline, not cached)
    the settings stay as given, and loading the policy says why in one line."""
    from huggingface_hub import constants

    from pytest_benchmarks.core import validation
    from pytest_benchmarks.policies.declared import declared_images, with_declared_images
    from pytest_benchmarks.policies.hub import PolicySourceError

    (tmp_path / "only-config").mkdir()
    config = {"type": "act", "input_features": {
        "observation.state": {"type": "STATE", "shape": [39]},
        "observation.images.corner2": {"type": "VISUAL", "shape": [3, 40, 56]}}}  # fmt: skip
    (tmp_path / "only-config" / "config.json").write_text(json.dumps(config))
    hub_cache(tmp_path / "hub", "my-org/act-cam", tmp_path / "only-config", "c" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    cached = with_declared_images(validation.build(root=tmp_path, policy="lerobot:my-org/act-cam"))
    assert cached.image_size == (40, 56) and cached.image_size_declared
    assert cached.image_size_from == "lerobot:my-org/act-cam's config.json (1 camera)"
    given = validation.build(root=tmp_path, policy="lerobot:my-org/act-cam", image_size=32)
    assert with_declared_images(given).image_size == (32, 32)
    absent = validation.build(root=tmp_path, policy="lerobot:my-org/other")
    assert with_declared_images(absent) == absent
    with pytest.raises(PolicySourceError) as missing:
        declared_images(absent.policy)
    assert str(missing.value).startswith("lerobot:my-org/other: not in the local Hub cache")
    assert "\n" not in str(missing.value)
    # No valid repository id: no declared size (the policy's loading names the problem).
    bad = validation.build(root=tmp_path, policy="lerobot:my-org/no such repo")
    assert declared_images(bad.policy) is None and with_declared_images(bad) == bad


def test_a_camera_the_env_lacks_is_padded_with_a_blank_image(
    pytester: pytest.Pytester, tmp_path: Path
):
    inputs = {**MW_INPUTS, "observation.images.wrist": (3, IMAGE, IMAGE)}
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=4)
    run_policy(pytester, folder, "--benchmark-obs=pixels").assert_outcomes(passed=1)


def test_a_rename_of_a_feature_the_env_lacks_is_refused_in_one_line(tmp_path: Path):
    """lerobot-eval's pre-processor skips a rename whose feature is absent; here it is a
    misspelt name, said before any episode, with the names the env gives."""
    from pytest_benchmarks.core.policy_spec import Loading
    from pytest_benchmarks.policies.hub import PolicySourceError

    folder = lerobot_models.checkpoint("act", tmp_path / "act", MW_INPUTS, action_dim=4)
    benchmark, config = reach_pixels()
    misspelt = Loading("cpu", rename_map=(("observation.images.corner", "observation.image"),))
    with pytest.raises(PolicySourceError) as refused:
        make_policy(f"lerobot:{folder}", benchmark, config, 1, misspelt)
    assert str(refused.value) == (
        f"lerobot:{folder.resolve()}: --benchmark-rename-map renames "
        "'observation.images.corner', which metaworld/reach-v3 does not give; it gives "
        "observation.images.corner2, observation.state"
    )


def test_a_checkpoint_of_another_action_size_is_refused_in_one_line(tmp_path: Path):
    """A policy trained for another robot (6 action values for Meta-World's 4) is said before
    any episode, not in numpy's words at its first action."""
    from pytest_benchmarks.core.policy_spec import Loading
    from pytest_benchmarks.policies.hub import PolicySourceError

    folder = lerobot_models.checkpoint("act", tmp_path / "act", MW_INPUTS, action_dim=6)
    benchmark, config = reach_pixels()
    with pytest.raises(PolicySourceError) as refused:
        make_policy(f"lerobot:{folder}", benchmark, config, 1, Loading("cpu"))
    assert str(refused.value) == (
        f"lerobot:{folder.resolve()}: its actions have 6 values (config.json's "
        "output_features.action) but metaworld/reach-v3 takes 4 values; a checkpoint trained "
        "for another robot or benchmark?"
    )


def test_load_errors_are_one_line(pytester: pytest.Pytester, tmp_path: Path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps(["not", "a", "config"]))
    result = run_policy(pytester, broken)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*lerobot:{broken.resolve()}: not a LeRobot checkpoint, or *"])
    assert "Traceback" not in result.stdout.str()
    absent = pytester.runpytest("--benchmark-policy=lerobot:./absent/model")
    assert absent.ret == pytest.ExitCode.USAGE_ERROR
    absent.stderr.fnmatch_lines(
        ["ERROR: --benchmark-policy: lerobot:./absent/model: no such directory"]
    )


@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
def test_a_file_of_a_checkpoint_names_the_folder_to_give(tmp_path: Path, name: str):
    """A checkpoint's file given where its folder goes (copied from a listing of the folder):
    the folder is named, before any task (the option) and where a task builds it."""
    folder = tmp_path / "checkpoints" / "last" / "pretrained_model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    given = folder / name
    with pytest.raises(OptionError) as refused:
        evaluate("metaworld", f"lerobot:{given}", tasks=["reach-v3"])
    assert str(refused.value) == (
        f"--benchmark-policy: lerobot:{given} is a file; give the folder that holds config.json "
        f"({folder})"
    )
    with pytest.raises(OptionError) as local:
        evaluate("metaworld", str(given), tasks=["reach-v3"])
    assert str(local.value) == (
        f"--benchmark-policy: {given} is a file; give the folder that holds config.json ({folder})"
    )
    benchmark, config = reach_pixels()
    with pytest.raises(PolicySourceError) as built:
        make_policy(f"lerobot:{given}", benchmark, config, 1, Loading("cpu"))
    assert str(built.value) == (
        f"lerobot:{given} is a file; give the folder that holds config.json ({folder})"
    )


def test_a_checkpoint_this_lerobot_cannot_read_names_its_file_and_versions(
    pytester: pytest.Pytester, tmp_path: Path
):
    """A config field this LeRobot does not know (a checkpoint from another LeRobot) and a
    processor step it does not have: one line naming the file and both versions."""
    from importlib import metadata

    installed = metadata.version("lerobot")
    inputs = {"observation.state": (4,), "observation.image": (3, IMAGE, IMAGE)}
    other = lerobot_models.checkpoint("act", tmp_path / "other", inputs, action_dim=4)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "a_field_of_another_version": 1}))
    (other / "README.md").write_text("| Field | Value |\n|---|---|\n| LeRobot version | 0.9.0 |\n")
    result = run_policy(pytester, other, "--benchmark-obs=lerobot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*lerobot:{other.resolve()}: not a LeRobot checkpoint, or one this LeRobot cannot read: "
        f"{other.resolve() / 'config.json'} (*a_field_of_another_version*); saved with LeRobot "
        f"0.9.0, installed: LeRobot {installed}"
    ])  # fmt: skip
    steps = lerobot_models.checkpoint("act", tmp_path / "steps", inputs, action_dim=4)
    pre = json.loads((steps / "policy_preprocessor.json").read_text())
    pre["steps"][-1]["registry_name"] = "a_step_of_another_version"
    (steps / "policy_preprocessor.json").write_text(json.dumps(pre))
    result = run_policy(pytester, steps, "--benchmark-obs=lerobot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*lerobot:{steps.resolve()}: processors this LeRobot cannot read: "
        f"{steps.resolve() / 'policy_preprocessor.json'}, *(*a_step_of_another_version*); "
        f"installed: LeRobot {installed}; the checkpoint does not say which LeRobot saved it"
    ])  # fmt: skip
    assert "Traceback" not in result.stdout.str()


def test_libero_pixels(tmp_path: Path):
    inputs = {"observation.state": (8,),
              "observation.images.agentview_image": (3, IMAGE, IMAGE),
              "observation.images.robot0_eye_in_hand_image": (3, IMAGE, IMAGE)}  # fmt: skip
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=7)
    run = evaluate("libero", f"lerobot:{folder}", tasks=["libero_spatial/0"], episodes=1,
                   max_steps=6, obs="pixels", image_size=IMAGE, device="cpu")  # fmt: skip
    assert [r.error for r in run.results] == [None]
    assert run.results[0].episodes[0].steps == 6


def test_a_hub_checkpoint_from_the_local_cache_offline(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    inputs = {"observation.state": (4,), "observation.image": (3, IMAGE, IMAGE)}
    folder = lerobot_models.checkpoint("act", tmp_path / "act", inputs, action_dim=4)
    commit = "89abcdef0123456789abcdef0123456789abcdef"
    hub_cache(tmp_path / "hub", "my-org/act-reach", folder, commit)
    offline_hub(monkeypatch, tmp_path / "hub")
    metrics = tmp_path / "m.json"
    run_policy(pytester, "my-org/act-reach", f"--benchmark-metrics={metrics}").assert_outcomes(
        passed=1
    )
    identity = read_metrics(metrics)["results"][0]["policy"]
    assert identity == {"source": "lerobot", "id": "my-org/act-reach", "revision": commit}
    missing = run_policy(pytester, "my-org/absent")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*lerobot:my-org/absent: not in the local Hub cache*"])


@pytest.mark.parametrize("kind", ["smolvla", "pi0"])
def test_smolvla_and_pi0_configs_go_through_the_same_feature_check(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
):
    """Configs as LeRobot's defaults make them (backbones named by Hub id). SmolVLA's fits
    LeRobot's Meta-World layout, and loading stops at its backbone, not in the Hub cache, in
    one line naming it; pi0's meets an env without cameras and gets the diff."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.configs.types import FeatureType, PolicyFeature

    config = PreTrainedConfig.get_choice_class(kind)(
        input_features={
            "observation.image": PolicyFeature(type=FeatureType.VISUAL, shape=(3, IMAGE, IMAGE)),
            "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(4,)),
        },
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(4,))},
        device="cpu",
    )
    folder = tmp_path / kind
    folder.mkdir()
    config._save_pretrained(folder)
    offline_hub(monkeypatch)
    if kind == "smolvla":
        result = run_policy(pytester, folder)
        result.stdout.fnmatch_lines(
            [f"*metaworld/reach-v3: lerobot:{folder}: its backbone (vlm_model_name) "
             "HuggingFaceTB/SmolVLM2-500M-Video-Instruct: not in the local Hub cache*"]
        )  # fmt: skip
    else:
        result = run_policy(pytester, folder, "--benchmark-obs=state")
        result.stdout.fnmatch_lines([
            f"*lerobot:{folder} does not fit metaworld/reach-v3:",
            f"*- observation.image [[]3, {IMAGE}, {IMAGE}]: the env does not provide it",
            "*~ observation.state: the policy wants [[]4], the env gives [[]39]",
        ])  # fmt: skip
    result.assert_outcomes(failed=1)
    assert "Traceback" not in result.stdout.str()
