"""LeRobot's own env types through the harness (``--benchmark-env=lerobot:TYPE``): made by
LeRobot's config and ``create_envs``, the same per-episode records as the native benchmarks on
the same seeds where the envs are the same, the same records at every batch size and under
xdist, and one line for each way a type cannot be made."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import run_in_subprocess

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog

pytest.importorskip("lerobot.envs.configs", reason="LeRobot is not installed")
for _native in ("pusht", "metaworld"):
    if catalog.get(_native).missing():
        pytest.skip(catalog.get(_native).missing(), allow_module_level=True)

ROOT = Path(__file__).parents[3]

#: Deterministic policies of the observation alone: the same actions wherever the same
#: observations come, so equal records mean equal envs.
POLICIES = '''
import numpy as np

class Hold:
    """Holds the robot where it is: the action is the state it reads (clipped)."""
    def __init__(self, config, num_envs):
        self.dim, self.low, self.high = (config.action_space.shape[0], config.action_space.low,
                                         config.action_space.high)
    def reset(self, slots, seeds):
        pass
    def act(self, batch):
        state = np.asarray(batch["observation.state"], dtype=np.float32)[:, : self.dim]
        return np.clip(state + 7.0, self.low, self.high).astype(np.float32)
    def identity(self):
        return {"source": "module", "id": "hold", "revision": None}

class Zero(Hold):
    def act(self, batch):
        return np.zeros((len(batch["task"]), self.dim), np.float32)

def hold(config, num_envs):
    return Hold(config, num_envs)

def zero(config, num_envs):
    return Zero(config, num_envs)
'''


@pytest.fixture
def policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "mypolicies.py").write_text(POLICIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("mypolicies", None)  # other tests write a module of that name


def records(result: Any) -> list[tuple[Any, ...]]:
    """Each episode's outcome but its initial state's number (LeRobot's envs have none)."""
    return [(e.index, e.seed, e.success, e.steps, e.sum_reward, e.max_reward)
            for e in result.episodes]  # fmt: skip


@pytest.mark.parametrize(
    ("native", "native_kw", "lerobot_kw", "policy"),
    [
        ("pusht", {"obs": "state"}, {"env_args": "obs_type=environment_state_agent_pos"}, "hold"),
        ("metaworld", {"obs": "lerobot", "tasks": ["push-v3"]}, {"tasks": ["push-v3"]}, "zero"),
    ],
)
def test_the_same_records_as_the_native_benchmark_on_the_same_seeds(
    policies: Path, native: str, native_kw: dict[str, Any], lerobot_kw: dict[str, Any],
    policy: str,
):  # fmt: skip
    """PushT through LeRobot's PushtEnv (gym-pusht) and Meta-World through LeRobot's own
    MetaworldEnv give, episode for episode, what the native benchmarks give (Meta-World's in
    its ``lerobot`` layout, which seeds the scene as LeRobot's env does)."""
    common = {"policy": f"module:mypolicies:{policy}", "episodes": 3, "max_steps": 15}
    ours = evaluate(native, **native_kw, **common, metrics=policies / "native.json")
    theirs = evaluate(f"lerobot:{native}", **lerobot_kw, **common, metrics=policies / "lr.json")
    (a,), (b,) = ours.results, theirs.results
    assert a.error is None and b.error is None, (a.error, b.error)
    assert b.task.id == {"pusht": "lerobot:pusht/pusht/0",
                         "metaworld": "lerobot:metaworld/push-v3/0"}[native]  # fmt: skip
    assert [e.seed for e in b.episodes] == [1000, 1001, 1002]
    assert records(a) == records(b)
    assert any(e.sum_reward for e in b.episodes)  # the episodes did something


def test_records_are_the_same_at_every_batch_size_and_under_xdist(pytester: pytest.Pytester):
    """A session of ``lerobot:pusht`` (its LeRobot fields from --benchmark-env-arg) at batch 1,
    batch 2 and under ``-n 2``: the same records; the gate's snapshot written and passed."""
    pytester.makepyfile(mypolicies=POLICIES)
    pytester.makepyfile(test_lr=(ROOT / "benchmarks" / "test_lerobot_types.py").read_text())
    page = (ROOT / "docs" / "benchmarks" / "lerobot.md").read_text()
    command = shlex.split(page.split("```bash\n", 1)[1].split("\n```", 1)[0])
    assert command[:2] == ["pytest", "benchmarks"] and command[-2:] == ["-n", "2"]
    # The page's command, smaller; -n 2 below, and batch sizes 1 and 2 beside it.
    args = ["-p", "no:cacheprovider", *command[2:-2], "--benchmark-episodes=4",
            "--benchmark-max-steps=12"]  # fmt: skip
    found = []
    runs = (["--benchmark-batch-size=1", "--benchmark-record=rec"],
            ["--benchmark-batch-size=2", "--benchmark-video=all"], ["-n", "2"])  # fmt: skip
    for extra in runs:
        run = pytester.runpytest_subprocess if "-n" in extra else pytester.runpytest
        result = run(*args, *extra, "--snapshot-update")
        result.assert_outcomes(passed=2)
        document = json.loads((pytester.path / "benchmark-results" / "metrics.json").read_text())
        (row,) = document["results"]
        assert row["id"] == "lerobot:pusht/pusht/0"
        found.append([{k: e[k] for k in ("index", "seed", "success", "steps", "sum_reward")}
                      for e in row["episodes"]])  # fmt: skip
    assert found[0] == found[1] == found[2]
    # Recorded at LeRobot's PushT rate; a video per episode.
    info = json.loads((pytester.path / "rec" / "meta" / "info.json").read_text())
    assert (info["fps"], info["total_episodes"]) == (10, 4)
    videos = pytester.path / "benchmark-results" / "videos" / "lerobot:pusht" / "pusht" / "0"
    assert sorted(p.name for p in videos.iterdir()) == [f"episode_{i:04d}.mp4" for i in range(4)]
    snapshot = pytester.path / "__benchmark_snapshots__" / "test_lr" / "test_no_regression"
    assert [p.name for p in snapshot.rglob("*.json")] == ["0.json"]
    again = pytester.runpytest(*args)  # gated by what was written
    again.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--benchmark-env=lerobot:nosuch"],
         "ERROR: --benchmark-env: lerobot:nosuch: LeRobot knows no env type 'nosuch'; known here: "
         "aloha, *, pusht, *"),
        (["--benchmark-env=lerobot:pusht", "--benchmark-env-arg=obs_typo=x"],
         "ERROR: --benchmark-env-arg: obs_typo=x: lerobot:pusht: LeRobot's config rejects "
         "--obs_typo=x; its fields: *obs_type*"),
        (["--benchmark-env=lerobot:robocasa"],
         "ERROR: --benchmark-task: lerobot:robocasa: its simulator is not installed "
         "('robocasa*') (the config's default task; --benchmark-task names another, as "
         "LeRobot's --env.task does)"),
        (["--benchmark-env=lerobot:vlabench"],  # LeRobot's env is lazy: said at its first reset
         "ERROR: --benchmark-env: benchmark 'lerobot:vlabench' (pytest_benchmarks.families entry "
         "point *): *lerobot:vlabench: its simulator is not installed ('VLABench')"),
        (["--benchmark-env=lerobot:pusht", "--benchmark-task=PushZ-v9"],
         "ERROR: --benchmark-task: lerobot:pusht: 'PushZ-v9' is no task here and LeRobot makes "
         "no env of it (*); tasks: pusht/0"),
        (["--benchmark-env=metaworld", "--benchmark-env-arg=obs_type=pixels"],
         "ERROR: --benchmark-env-arg: sets fields of LeRobot's env config, for lerobot:TYPE "
         "benchmarks only; this run has metaworld"),
        # What LeRobot refuses only with the env args blames them, not the task.
        (["--benchmark-env=lerobot:pusht", "--benchmark-env-arg=obs_type=bogus"],
         "ERROR: --benchmark-env-arg: obs_type=bogus: lerobot:pusht: create_envs: ValueError: "
         "Unknown obs_type bogus.* (without these fields LeRobot makes it)"),
        (["--benchmark-env=lerobot:pusht", "--benchmark-env-arg=episode_length=-5",
          "--benchmark-task=PushT-v0"],
         "ERROR: --benchmark-env-arg: episode_length=-5: lerobot:pusht: episode_length is -5, "
         "not a positive number (without these fields LeRobot makes it)"),
        (["--benchmark-env=lerobot:pusht", "--benchmark-env-arg=fps=0"],
         "ERROR: --benchmark-env-arg: fps=0: lerobot:pusht: fps is 0, not a positive number "
         "(without these fields LeRobot makes it)"),
        (["--benchmark-env=lerobot:pusht", "--benchmark-env-arg=observation_height=0"],
         "ERROR: --benchmark-env-arg: observation_height=0: lerobot:pusht: observation_height is "
         "0, not a positive number (without these fields LeRobot makes it)"),
        # Fields LeRobot accepts but that leave no observation this harness can hand a policy,
        # on two types at once (gym-aloha's pixels are {"top": ...}, gym-pusht's one image).
        (["--benchmark-env=lerobot:aloha,lerobot:pusht", "--benchmark-env-arg=obs_type=pixels"],
         "ERROR: --benchmark-env-arg: obs_type=pixels: lerobot:aloha: the env's observations "
         "(top) hold none of pixels, agent_pos, environment_state, the keys LeRobot's policies "
         "read (without these fields it runs here)"),
        (["--benchmark-env=lerobot:pusht", "--benchmark-env-arg=obs_type=pixels"],
         "ERROR: --benchmark-env-arg: obs_type=pixels: lerobot:pusht: the env's observations are "
         "Box(0, 255, (96, 96, 3), uint8), not a dict (without these fields it runs here)"),
        (["--benchmark-env=lerobot:"],
         "ERROR: --benchmark-env: benchmark 'lerobot:' names no lerobot type: lerobot:TYPE"),
    ],
)  # fmt: skip
def test_a_type_that_cannot_be_made_is_one_line(pytester: pytest.Pytester, args, line):
    pytester.makepyfile(test_lr="import pytest\npytestmark = pytest.mark.benchmark_env('lerobot')\n"
                                "def test_it(evaluate):\n    evaluate()\n")  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])
    assert "Traceback" not in result.stderr.str()


#: What a process of its own prints for lerobot:broken, whose plugin raises on import.
BROKEN_TYPE = """
from pytest_benchmarks.api import evaluate
try:
    evaluate("lerobot:broken")
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def test_a_plugin_that_fails_to_import_is_named_with_its_error(tmp_path: Path):
    """An installed ``lerobot_env_*`` plugin whose import raises registers no type: its type is
    said to come from a plugin that failed, with the first line of its error, and LeRobot's
    traceback for it is not printed. A process of its own: plugins are discovered once."""
    site = tmp_path / "site"
    (site / "lerobot_env_broken-0.1.dist-info").mkdir(parents=True)
    (site / "lerobot_env_broken-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lerobot_env_broken\nVersion: 0.1\n"
    )
    (site / "lerobot_env_broken.py").write_text(
        "raise RuntimeError('gym_broken 2.0 is required\\nsee its install guide')\n"
    )
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, "-c", BROKEN_TYPE], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": path}, timeout=300, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        "OptionError: --benchmark-env: lerobot:broken: the env plugin lerobot_env_broken is "
        "installed but failed to import (RuntimeError: gym_broken 2.0 is required); fix or "
        "reinstall it"
    ], done.stderr
    assert "Traceback" not in done.stderr


def test_the_gl_backend_is_chosen_before_a_type_builds_its_simulator(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """Listing ``lerobot:aloha``'s tasks builds dm_control's physics, which reads MUJOCO_GL at
    import: chosen first, so a machine with no display gets no GLFW errors, no crash in
    ``MjrContext.__del__``, only the one line. A process of its own: the suite's has chosen."""
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    pytester.makepyfile(test_lr="import pytest\npytestmark = pytest.mark.benchmark_env('lerobot')\n"
                                "def test_it(evaluate):\n    evaluate()\n")  # fmt: skip
    result = run_in_subprocess(
        pytester, "--benchmark-env=lerobot:aloha", "--benchmark-env-arg=obs_type=pixels"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --benchmark-env-arg: obs_type=pixels: lerobot:aloha: *"])
    assert "GLFW" not in result.stderr.str() and "Exception ignored" not in result.stderr.str()


#: Zero actions, but a Ctrl-C at reach-v3's third episode unless the file ``calm`` exists
#: (which it then writes): one interruption.
FLAKY = """
from pathlib import Path
import numpy as np

class Zero:
    def __init__(self, config, num_envs):
        self.task, self.dim = config.task.name, config.action_space.shape[0]
    def reset(self, slots, seeds):
        if "reach-v3" in self.task and 1002 in seeds and not Path("calm").exists():
            Path("calm").touch()
            raise KeyboardInterrupt
    def act(self, batch):
        return np.zeros((len(batch["task"]), self.dim), np.float32)
    def identity(self):
        return {"source": "module", "id": "zero", "revision": None}

def make(config, num_envs):
    return Zero(config, num_envs)
"""


@pytest.mark.long
def test_shards_merge_and_a_resumed_run_equal_the_whole_run(pytester: pytest.Pytester):
    """lerobot:metaworld over two tasks: the two shards, merged by the CLI, and a run cut by a
    Ctrl-C then resumed, hold the uninterrupted run's records, episode for episode."""
    pytester.makepyfile(flaky=FLAKY)
    pytester.makepyfile(test_lr=(ROOT / "benchmarks" / "test_lerobot_types.py").read_text())
    args = ["-p", "no:cacheprovider", "--benchmark-env=lerobot:metaworld", "-k", "test_rollout",
            "--benchmark-task=push-v3,reach-v3", "--benchmark-episodes=4",
            "--benchmark-max-steps=10", "--benchmark-policy=module:flaky:make"]  # fmt: skip

    def outcomes(path: Path) -> dict[str, list[tuple[Any, ...]]]:
        document = json.loads(path.read_text())
        return {row["id"]: [(e["index"], e["seed"], e["success"], e["steps"], e["sum_reward"])
                            for e in row["episodes"]] for row in document["results"]}  # fmt: skip

    (pytester.path / "calm").touch()
    pytester.runpytest(*args, "--benchmark-metrics=whole.json").assert_outcomes(passed=2)
    whole = outcomes(pytester.path / "whole.json")
    assert sorted(whole) == ["lerobot:metaworld/push-v3/0", "lerobot:metaworld/reach-v3/0"]
    for i in (1, 2):
        shard = pytester.runpytest(
            *args, f"--benchmark-shard={i}/2", f"--benchmark-metrics={i}.json"
        )
        shard.assert_outcomes(passed=1)
    cli = Path(sys.executable).parent / "pytest-benchmarks"
    merged = subprocess.run([str(cli), "merge", "1.json", "2.json", "-o", "merged.json"],
                            cwd=pytester.path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    assert outcomes(pytester.path / "merged.json") == whole

    (pytester.path / "calm").unlink()
    # The policy's Ctrl-C ends the inner session, not this one (pytester re-raises it otherwise).
    cut = pytester.runpytest(*args, "--benchmark-metrics=run.json", no_reraise_ctrlc=True)
    assert cut.ret == pytest.ExitCode.INTERRUPTED
    assert json.loads((pytester.path / "run.json").read_text())["run"]["partial"] is True
    resumed = pytester.runpytest(*args, "--benchmark-metrics=run.json", "--benchmark-resume")
    resumed.assert_outcomes(passed=2)
    resumed.stdout.fnmatch_lines(["resume: * kept from *run.json*"])
    assert outcomes(pytester.path / "run.json") == whole


def test_an_env_postprocessor_is_refused_in_one_line_and_an_empty_pipeline_keeps_numpy():
    """A type whose env postprocessor would change the actions cannot run here (the harness
    sends the policy's actions to the env as they are): said in one line. PushT's pipelines
    are empty, so its observations take the direct path."""
    from lerobot.envs.configs import PushtEnv
    from lerobot.processor import PolicyProcessorPipeline
    from lerobot.processor.batch_processor import AddBatchDimensionActionStep

    from pytest_benchmarks.envs.lerobot.env import LeRobotEnvError
    from pytest_benchmarks.envs.lerobot.processing import env_preprocessor

    assert env_preprocessor(PushtEnv()) is None

    adapted = PushtEnv()
    post = PolicyProcessorPipeline(steps=[AddBatchDimensionActionStep()])
    adapted.get_env_processors = lambda: (PolicyProcessorPipeline(steps=[]), post)
    with pytest.raises(LeRobotEnvError) as refused:
        env_preprocessor(adapted)
    assert str(refused.value) == (
        "lerobot:pusht: its env postprocessor (AddBatchDimensionActionStep) changes the actions, "
        "which this harness does not apply; write a native benchmark for it"
    )
