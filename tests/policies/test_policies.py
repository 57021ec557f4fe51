"""Learned policies: a tiny torch policy trained here, saved in the Hugging Face format, loaded
from a directory, from a local Hub cache (offline) and from the user's module; action chunks;
feature checks; the Python API sharing the plugin's evaluation path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch._dynamo
from checkpoints import train_tiny_policy
from helpers import TOY_CONFTEST, hub_cache, offline_hub, outcomes, read_metrics, run

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core.features import Feature, FeatureMismatch, check_features
from pytest_benchmarks.policies.chunking import ChunkQueues
from pytest_benchmarks.policies.torch_policy import TorchPolicy

# torch._dynamo is imported here, not lazily by the first optimiser step: pytester unloads the
# modules a test imports, and torch cannot register its operators a second time.

TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("metaworld")

def test_rollout(evaluate):
    assert evaluate().error is None
"""
ARGS = ("--benchmark-task=reach-v3", "--benchmark-episodes=2", "--benchmark-max-steps=30",
        "--benchmark-batch-size=1", "-p", "no:cacheprovider")  # fmt: skip


def test_trained_checkpoint_gives_identical_records_through_api_and_pytest(
    pytester: pytest.Pytester, tmp_path: Path
):
    checkpoint = tmp_path / "step_5"
    train_tiny_policy(checkpoint)
    assert {p.name for p in checkpoint.iterdir()} >= {"config.json", "model.safetensors"}
    api_metrics = tmp_path / "api.json"
    api_run = evaluate("metaworld", str(checkpoint), tasks=["reach-v3"], episodes=2, max_steps=30,
                   device="cpu", metrics=api_metrics)  # fmt: skip
    assert [r.n_episodes for r in api_run.results] == [2]
    assert api_run.results[0].policy["source"] == "local"
    assert api_run.metrics == read_metrics(api_metrics)

    pytester.makepyfile(test_mw=TESTS)
    plugin_metrics = tmp_path / "plugin.json"
    result = run(
        pytester, *ARGS, f"--benchmark-policy={checkpoint}", f"--benchmark-metrics={plugin_metrics}"
    )
    result.assert_outcomes(passed=1)
    plugin = read_metrics(plugin_metrics)
    assert outcomes(plugin) == outcomes(api_run.metrics)
    identity = plugin["results"][0]["policy"]
    assert identity["source"] == "local" and identity["id"] == str(checkpoint)
    assert identity["revision"] == api_run.results[0].policy["revision"]
    assert len(identity["revision"]) == 12  # the weights' hash


def test_hub_policy_from_the_local_cache_offline(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    train_tiny_policy(tmp_path / "ckpt")
    commit = "0123456789abcdef0123456789abcdef01234567"
    hub_cache(tmp_path / "hub", "tiny-org/tiny-policy", tmp_path / "ckpt", commit)
    offline_hub(monkeypatch, tmp_path / "hub")
    pytester.makepyfile(test_mw=TESTS)
    metrics = tmp_path / "hub.json"
    result = run(
        pytester,
        *ARGS,
        "--benchmark-policy=hub:tiny-org/tiny-policy",
        f"--benchmark-metrics={metrics}",
    )
    result.assert_outcomes(passed=1)
    identity = read_metrics(metrics)["results"][0]["policy"]
    assert identity == {"source": "hub", "id": "tiny-org/tiny-policy", "revision": commit}
    pinned = run(
        pytester,
        *ARGS,
        f"--benchmark-policy=hub:tiny-org/tiny-policy@{commit}",
        "--benchmark-metrics=p.json",
    )
    pinned.assert_outcomes(passed=1)
    missing = run(pytester, *ARGS, "--benchmark-policy=hub:tiny-org/absent")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [
            "*metaworld/reach-v3: hub:tiny-org/absent: not in the local Hub cache, and the Hub cannot be reached*"
        ]
    )


def test_module_policy_factory(pytester: pytest.Pytester):
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makepyfile(
        my_policies="""
import numpy as np

class Forward:
    def __init__(self, num_envs):
        self.num_envs = num_envs
    def reset(self, slots, seeds):
        pass
    def act(self, batch):
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "my_policies:make", "revision": "v1"}

def make(config, num_envs):
    return Forward(num_envs)

def broken(config, num_envs):
    return object()

def forgot(config, num_envs):
    Forward(num_envs)

count = 3
""",
        test_toy="""
import pytest
pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    assert evaluate().successes == evaluate().n_episodes
""",
    )
    # In this process: four sessions, one start-up.
    pytester.syspathinsert()
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--benchmark-policy=module:my_policies:make"
    )
    result.assert_outcomes(passed=2)
    row = read_metrics(pytester.path / "benchmark-results" / "metrics.json")["results"][0]
    assert row["policy"] == {"source": "module", "id": "my_policies:make", "revision": "v1"}
    for spec, message in (
        (
            "module:my_policies:broken",
            "module:my_policies:broken: broken() returned object, which lacks reset, act, identity*",
        ),
        ("module:my_policies:nothing", "module:my_policies:nothing: my_policies has no nothing"),
        (
            "module:my_policies:count",
            "module:my_policies:count: my_policies.count is int 3, not a factory; expected a "
            "function or class, called as count(config, num_envs), that returns a Policy",
        ),
        (
            "module:my_policies:forgot",
            "module:my_policies:forgot: forgot(config, num_envs) returned None, not a Policy (an "
            "object with reset, act and identity; see pytest_benchmarks.policies.Policy)",
        ),
        ("module:no_such_module:make", "module:no_such_module:make: cannot import no_such_module*"),
    ):
        bad = pytester.runpytest("-p", "no:cacheprovider", f"--benchmark-policy={spec}")
        bad.assert_outcomes(failed=2)  # each task's test; its row holds the error
        bad.stdout.fnmatch_lines(
            [f"*toy/walk: {message}", f"toy/walk *ERROR PolicyError: {message}"]
        )


def test_action_chunk_queues_refill_per_slot_and_clear_on_reset():
    calls = []

    def predict(batch):
        calls.append(batch["step"])
        # chunk of 3 actions per slot: (call number, position in chunk)
        n = len(calls)
        return np.array([[[n, i] for i in range(3)] for _ in range(2)], dtype=np.float32)

    queues = ChunkQueues(2)
    taken = [queues.next({"step": s}, predict) for s in range(2)]
    assert [a.tolist() for a in taken] == [[[1, 0], [1, 0]], [[1, 1], [1, 1]]]
    queues.reset([0])  # slot 0's episode ended: its leftover action is dropped
    a = queues.next({"step": 2}, predict)
    assert a.tolist() == [[2, 0], [1, 2]] and calls == [0, 2]  # only slot 0 refilled
    a = queues.next({"step": 3}, predict)
    assert a.tolist() == [[2, 1], [3, 0]]
    with pytest.raises(
        ValueError,
        match=r"action chunk must have shape \(num_envs, chunk >= 1, action\), got \[2, 4\]",
    ):
        ChunkQueues(2).next({}, lambda b: np.zeros((2, 4)))


def test_chunked_torch_policy_runs_through_the_rollout(tmp_path: Path):
    train_tiny_policy(tmp_path / "chunked", chunk=4)
    run = evaluate("metaworld", str(tmp_path / "chunked"), tasks=["reach-v3"], episodes=3,
                   max_steps=10, batch_size=2, sync=True, device="cpu")  # fmt: skip
    result = run.results[0]
    assert result.error is None and [e.steps for e in result.episodes] == [10, 10, 10]


def test_feature_check_diff_and_camera_padding():
    env = {"observation.state": Feature((8,), "float32"),
           "observation.images.agentview": Feature((64, 64, 3), "uint8")}  # fmt: skip
    pad = check_features("hub:o/p", "libero/x", {"observation.state": (8,),
                         "observation.images.wrist": (64, 64, 3)}, env)  # fmt: skip
    assert pad == ["observation.images.wrist"]
    with pytest.raises(FeatureMismatch) as info:
        check_features("hub:o/p", "metaworld/push-v3",
                       {"observation.state": (39,), "observation.environment_state": (3,)}, env)  # fmt: skip
    assert str(info.value).splitlines() == [
        "hub:o/p does not fit metaworld/push-v3:",
        "  ~ observation.state: the policy wants [39], the env gives [8]",
        "  - observation.environment_state [3]: the env does not provide it",
        "  env features: observation.state [8], observation.images.agentview [64, 64, 3]",
    ]

    class TwoCameras(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.input_features = {
                "observation.images.agentview": (4, 4, 3),
                "observation.images.wrist": (4, 4, 3),
            }

        def forward(self, batch):
            wrist = batch["observation.images.wrist"]
            assert wrist.shape == (2, 4, 4, 3) and int(wrist.sum()) == 0  # padded blank
            return batch["observation.images.agentview"].float().mean(dim=(1, 2))[:, :1]

    policy = TorchPolicy(
        TwoCameras(), 2, "cpu", {"source": "t"}, [("observation.images.wrist", (4, 4, 3))]
    )
    batch = {"observation.images.agentview": np.full((2, 4, 4, 3), 2, np.uint8), "task": ["a", "b"]}
    assert policy.act(batch).tolist() == [[2.0], [2.0]]


def test_a_policy_that_does_not_fit_the_env_fails_before_any_episode(
    pytester: pytest.Pytester, tmp_path: Path
):
    train_tiny_policy(tmp_path / "small", state_dim=8)
    pytester.makepyfile(test_mw=TESTS)
    result = run(pytester, *ARGS, f"--benchmark-policy={tmp_path / 'small'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*metaworld/reach-v3: local:{tmp_path / 'small'} does not fit metaworld/reach-v3:",
            "*~ observation.state: the policy wants [[]8[]], the env gives [[]39[]]",
        ]
    )
    # No episode ran; the task's row says why.
    row = read_metrics(pytester.path / "benchmark-results" / "metrics.json")["results"][0]
    assert row["n_episodes"] == 0 and row["planned_episodes"] == 2
    assert row["error"] == (
        f"PolicyError: local:{tmp_path / 'small'} does not fit metaworld/reach-v3:"
    )


def test_bad_policy_and_device_options_are_one_line(pytester: pytest.Pytester, tmp_path: Path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "noclass").mkdir()
    (tmp_path / "noclass" / "config.json").write_text(json.dumps({"state_dim": 3}))
    cases = [
        (
            f"--benchmark-policy={tmp_path}/absent",
            f"{tmp_path}/absent is no directory; a checkpoint directory holds config.json*",
        ),
        (
            f"--benchmark-policy={tmp_path}/empty",
            f"{tmp_path}/empty is a directory without config.json*",
        ),
        (
            "--benchmark-policy=hub:",
            "--benchmark-policy: policy 'hub:': hub needs a repository id, e.g. hub:org/name",
        ),
        (
            "--benchmark-policy=module:x",
            "--benchmark-policy: policy 'module:x': module needs package.module:factory*",
        ),
        ("--benchmark-device=tpu", "--benchmark-device: 'tpu' is not one of auto, cpu, cuda"),
        (
            "--benchmark-device=cuda",
            "--benchmark-device: cuda, but torch sees no CUDA device; use cpu",
        ),
    ]
    for arg, message in cases:
        result = run(pytester, arg)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, arg
        result.stderr.fnmatch_lines([f"ERROR: *{message.replace('[', '[[]')}"])
    pytester.makepyfile(test_mw=TESTS)
    result = run(pytester, *ARGS, f"--benchmark-policy={tmp_path}/noclass")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*config.json: no 'policy_class' naming the model class as 'package.module:Class'*"]
    )


def test_lerobot_policies_without_lerobot_are_one_line(pytester: pytest.Pytester):
    pytester.makeconftest("import sys\nsys.modules['lerobot'] = None  # as if not installed\n")
    result = pytester.runpytest_subprocess("--benchmark-policy=lerobot:lerobot/pi0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --benchmark-policy: lerobot:lerobot/pi0: LeRobot is not installed: "
        "pip install 'pytest-benchmarks[[]lerobot]'"
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (json.dumps(["not", "a", "config"]).encode(), "holds a JSON list, expected an object"),
        (b"\xff\xfe\x00binary", "not UTF-8 text (a binary file?)"),
    ],
)
def test_a_checkpoint_config_that_is_no_object_is_one_line(
    pytester: pytest.Pytester, tmp_path: Path, content: bytes, message: str
):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_bytes(content)
    pytester.makepyfile(test_mw=TESTS)
    result = run(pytester, *ARGS, f"--benchmark-policy={tmp_path / 'ckpt'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*metaworld/reach-v3: {tmp_path / 'ckpt'}/config.json: {message}"]
    )
    assert "Traceback" not in result.stdout.str()
    row = read_metrics(pytester.path / "benchmark-results" / "metrics.json")["results"][0]
    assert row["error"] == f"PolicyError: {tmp_path / 'ckpt'}/config.json: {message}"


@pytest.mark.parametrize(
    ("device", "worker", "count", "expected"),
    [
        ("cuda", "gw0", 2, "cuda:0"),
        ("cuda", "gw3", 2, "cuda:1"),
        ("cuda", "gw4", 3, "cuda:1"),
        ("auto", "gw1", 4, "cuda:1"),
        ("cuda", "gw5", 1, "cuda"),
        ("cuda", None, 4, "cuda"),
        ("cpu", "gw1", 4, "cpu"),
    ],
)
def test_xdist_workers_spread_over_the_gpus(
    monkeypatch: pytest.MonkeyPatch, device: str, worker: str | None, count: int, expected: str
):
    """Worker gwN's policies run on GPU N mod count (the GPU count faked: no GPU here)."""
    import torch

    from pytest_benchmarks.policies.hub import worker_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    assert worker_device(device, worker) == expected
