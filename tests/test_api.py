"""``pytest_benchmarks.api.evaluate`` builds its settings through the options' own validation:
the same one-line errors before anything runs, the same defaults, typed values accepted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog, validation
from pytest_benchmarks.core.policy import PolicyError
from pytest_benchmarks.core.settings import DEFAULT_EPISODES, DEFAULT_SEED
from pytest_benchmarks.core.validation import OptionError
from pytest_benchmarks.engine.deadline import TaskTimeout

#: A rename map is for a lerobot: policy's pre-processor (a Hub id: nothing is fetched here).
LEROBOT = "lerobot:lerobot/smolvla_base"


def test_typed_values_and_flag_strings_give_the_same_settings(tmp_path: Path):
    flags = validation.settings(
        {
            "--benchmark-env": "metaworld",
            "--benchmark-task": "reach-v3,push-v3",
            "--benchmark-episodes": "3",
            "--benchmark-image-size": "96x64",
            "--benchmark-camera-map": "corner=camera1",
            "--benchmark-episode": "2,0",
            "--benchmark-metrics": str(tmp_path / "m.json"),
        },
        tmp_path,
    )
    typed = validation.build(
        root=tmp_path,
        env=["metaworld"],
        task=["reach-v3", "push-v3"],
        episodes=3,
        image_size=(96, 64),
        camera_map={"corner": "camera1"},
        episode=[2, 0],
        metrics=tmp_path / "m.json",
    )
    assert typed == flags
    assert typed.image_size == (96, 64) and typed.episode_indices == (0, 2)
    # LeRobot's flags write these maps as JSON: pasted as they are, they mean the same.
    pasted = validation.build(
        root=tmp_path,
        camera_map='{"agentview_image": "camera1", "robot0_eye_in_hand_image": "camera2"}',
        rename_map='{"observation.image": "observation.images.camera1"}',
        policy=LEROBOT,
    )
    assert pasted.camera_map == (
        ("agentview_image", "camera1"),
        ("robot0_eye_in_hand_image", "camera2"),
    )
    assert pasted.rename_map == (("observation.image", "observation.images.camera1"),)
    assert (
        pasted.rename_map
        == validation.build(
            root=tmp_path, rename_map="observation.image=observation.images.camera1", policy=LEROBOT
        ).rename_map
    )
    # Nothing given: the plugin's defaults (batch size 0 is its "auto").
    default = validation.build(root=tmp_path)
    assert (default.episodes, default.seed, default.batch_size) == (
        DEFAULT_EPISODES,
        DEFAULT_SEED,
        0,
    )
    assert default.metrics == tmp_path / "benchmark-results" / "metrics.json"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"episodes": 0}, "--benchmark-episodes: '0' is not an integer in [1, 1000000]"),
        ({"image_size": (0, 64)}, "--benchmark-image-size: '0x64' is not N or HxW"),
        ({"render": "pretty"}, "--benchmark-render: 'pretty' is not one of faithful, fast"),
        ({"tasks": ["reach-v9"]}, "--benchmark-task: "),
        ({"camera_map": {"nowhere": "camera1"}}, "--benchmark-camera-map: no camera 'nowhere'"),
        ({"policy": "nosuch:thing"}, "--benchmark-policy: "),
        ({"metrics": "/proc/no/metrics.json"}, "--benchmark-metrics: cannot write /proc/no"),
        # Wrong types: the options' own words, never a raw TypeError or a silent coercion.
        ({"episodes": True}, "--benchmark-episodes: 'True' is not an integer in [1, 1000000]"),
        ({"tasks": []}, "--benchmark-task: an empty list names nothing; give names, or None"),
        ({"sync": "maybe"}, "--benchmark-sync: 'maybe' is not True or False"),
        ({"resume": 1}, "--benchmark-resume: 1 is not True or False"),
        ({"metrics": 5}, "--benchmark-metrics: 5 is not a path (a string or a pathlib.Path)"),
        ({"metrics": b"m.json"}, "--benchmark-metrics: b'm.json' is not a path"),
        ({"policy": 42}, "policy: 42 is not a spec (a string such as 'scripted'), a Policy"),
        ({"policy": None}, "policy: None is not a spec"),
        ({"policy": object()}, "policy: <object object at "),
        # LeRobot's JSON maps: names taken whole, a duplicate refused, a rename only for lerobot:
        (
            {"camera_map": '{"corner2,x": "camera1"}'},
            "--benchmark-camera-map: no camera 'corner2,x'",
        ),
        (
            {"camera_map": '{"corner2": "a", "corner2": "b"}'},
            "--benchmark-camera-map: 'corner2' is given twice; give each name once",
        ),
        ({"rename_map": '{"a=b": "c"}'}, "--benchmark-rename-map: renames a lerobot: policy's"),
        # A new camera name names files and features; a map needs cameras rendered.
        (
            {"camera_map": '{"corner2": "cam/1"}', "obs": "pixels"},
            "--benchmark-camera-map: corner2=cam/1: a camera name cannot hold '/'",
        ),
        (
            {"camera_map": "corner2=cam=1", "obs": "pixels"},
            "--benchmark-camera-map: corner2=cam=1: a camera name cannot hold '='",
        ),
        (
            {"camera_map": "corner2=camera1"},
            "--benchmark-camera-map: renames cameras, but the run's observations are state only",
        ),
    ],
)
def test_bad_arguments_fail_before_any_episode_with_the_options_words(
    arguments: dict[str, object], message: str
):
    with pytest.raises(OptionError) as info:
        evaluate("metaworld", **{"tasks": ["reach-v3"], **arguments})  # type: ignore[arg-type]
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"image_size": "100000x100000"},
            "--benchmark-image-size: 100000x100000 is too large: each side at most 16384 (the "
            "renderer's largest framebuffer; e.g. 224x224)",
        ),
        (
            {"image_size": (64, 16385)},
            "--benchmark-image-size: 64x16385 is too large: each side at most 16384 (the "
            "renderer's largest framebuffer; e.g. 224x224)",
        ),
        (
            {"camera_map": '["agentview_image", "camera1"]'},
            '--benchmark-camera-map: \'["agentview_image", "camera1"]\' is a JSON list, not '
            "OLD=NEW pairs; give OLD=NEW[,...] or a JSON object, e.g. agentview_image=camera1 or "
            '\'{"agentview_image": "camera1"}\'',
        ),
        (
            {"env_arg": "obs_type"},
            "--benchmark-env-arg: 'obs_type' is not FIELD=VALUE; give FIELD=VALUE[,...] or a JSON "
            'object, e.g. obs_type=pixels_agent_pos or \'{"render_resolution": "[480,480]"}\'',
        ),
        (
            {"env_arg": '["obs_type=pixels"]'},
            "--benchmark-env-arg: '[\"obs_type=pixels\"]' is a JSON list, not FIELD=VALUE pairs; "
            "give FIELD=VALUE[,...] or a JSON object, e.g. obs_type=pixels_agent_pos or "
            '\'{"render_resolution": "[480,480]"}\'',
        ),
        # Pasted from a lerobot-eval command: the field without LeRobot's prefix.
        (
            {"env_arg": "--env.obs_type=pixels_agent_pos"},
            "--benchmark-env-arg: --env.obs_type=pixels_agent_pos is lerobot-eval's "
            "--env.FIELD=VALUE; give FIELD=VALUE here (obs_type=pixels_agent_pos)",
        ),
        (
            {"env_arg": {"env.episode_length": "100"}},
            "--benchmark-env-arg: env.episode_length=100 is lerobot-eval's --env.FIELD=VALUE; "
            "give FIELD=VALUE here (episode_length=100)",
        ),
    ],
)
def test_a_value_of_the_wrong_form_names_its_option_and_the_form_it_takes(
    tmp_path: Path, arguments: dict[str, object], message: str
):
    with pytest.raises(OptionError) as info:
        validation.build(root=tmp_path, **arguments)
    assert str(info.value) == message


#: Runs in a process of its own: its address space is limited once Meta-World's tasks are listed
#: (so that its imports are done), leaving too little for one 16384x16384 image's arrays.
IMAGES_OVER_MEMORY = """
import resource
from pathlib import Path
from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import selection, validation

selection.select(validation.build(root=Path.cwd(), env=["metaworld"], task=["reach-v3"],
                                  obs="pixels", image_size=16))
status = Path("/proc/self/status").read_text()
size = int(status.split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 512 * 2**20, resource.RLIM_INFINITY))
try:
    evaluate("metaworld", tasks=["reach-v3"], obs="pixels", image_size=16384)
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def test_images_too_large_for_memory_blame_the_image_size_not_the_benchmark(tmp_path: Path):
    """A size the renderer takes whose arrays the machine cannot hold: a MemoryError while the
    benchmark declares its spaces names the image size, not a broken benchmark."""
    done = subprocess.run(
        [sys.executable, "-c", IMAGES_OVER_MEMORY],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        "OptionError: --benchmark-image-size: 16384x16384 is too large for this machine's memory "
        "(metaworld's spaces raised MemoryError: Unable to allocate 768. MiB for an array with "
        "shape (16384, 16384, 3) and data type bool); give a smaller size, e.g. 224x224"
    ], done.stderr


@pytest.mark.parametrize(
    ("server", "policy"), [("auto", "scripted"), ("off", "scripted"), ("auto", "lerobot")]
)
def test_a_server_wait_without_a_server_is_refused_in_one_line(
    server: str, policy: str, tmp_path: Path
):
    """No policy server in this run (off as given, a policy that is never served, or auto in
    one process): evaluate()'s wait would wait for nothing, and is refused before any load."""
    if policy == "lerobot":
        pytest.importorskip("lerobot.policies", reason="LeRobot is not installed")
        policy = f"lerobot:{tmp_path}"
    with pytest.raises(OptionError) as info:
        evaluate("metaworld", policy, tasks=["reach-v3"], policy_server=server,
                 policy_server_wait=10, device="cpu")  # fmt: skip
    assert str(info.value) == (
        "--benchmark-policy-server-wait=10: no policy server in this run "
        "(--benchmark-policy-server is off, or auto, which serves a lerobot: policy on a CUDA "
        "device, under xdist or on Ray), so it waits for nothing; drop it, or give "
        "policy_server='on'"
    )


def test_a_named_benchmark_that_no_task_selects_from_is_refused_in_one_line():
    """Named benchmarks each run something: one the tasks leave empty would run nothing."""
    with pytest.raises(OptionError) as info:
        evaluate(["metaworld", "aloha"], tasks=["reach-v3"])
    assert str(info.value) == (
        "--benchmark-task: aloha (named by --benchmark-env) has none of the tasks given "
        "(reach-v3); add one of its tasks or groups (aloha), or leave it out of --benchmark-env"
    )


def test_a_benchmark_name_that_is_no_string_is_refused_in_one_line():
    with pytest.raises(OptionError, match=r"^--benchmark-env: 5 is not a name or a list of names$"):
        evaluate(5)  # type: ignore[arg-type]


class Still:
    """A policy class, passed where its instance or a factory goes."""

    def reset(self, slots: object, seeds: object) -> None:
        pass

    def act(self, batch: dict[str, object]) -> object:
        return None

    def identity(self) -> dict[str, str | None]:
        return {"source": "module", "id": "still", "revision": None}


def test_a_policy_class_is_refused_naming_it():
    """Its methods make a class pass for a Policy; it is named as a class before any episode."""
    with pytest.raises(OptionError) as info:
        evaluate("metaworld", Still, tasks=["reach-v3"])  # type: ignore[arg-type]
    assert str(info.value) == (
        f"policy: <class '{__name__}.Still'> is a class, not a Policy; pass an instance "
        "(Still(...)) or a factory (config, num_envs) -> Policy"
    )


def test_a_factory_that_returns_no_policy_is_named_with_what_it_returned():
    import toybench  # noqa: F401  (registers the toy benchmark in this process)

    def forgot(config: object, num_envs: int) -> None:
        Still()

    with pytest.raises(PolicyError) as info:
        evaluate("toy", forgot, tasks=["walk"], episodes=1, sync=True)  # type: ignore[arg-type]
    assert str(info.value) == (
        "policy: the factory forgot(config, num_envs) returned None, not a Policy (an object "
        "with reset, act and identity)"
    )


#: A user's script that evaluates when imported, not under ``if __name__ == "__main__":``.
UNGUARDED = """
import toybench
from pytest_benchmarks.api import evaluate

try:
    evaluate("toy", tasks=["walk"], episodes=2, batch_size=2)
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def test_a_script_that_evaluates_when_imported_is_told_to_guard_the_call(tmp_path: Path):
    """Env workers (forkserver) import the main module first: a script that calls evaluate()
    at import would start it again in each worker, which Python stops with its long
    "bootstrapping phase" error. The workers stop at the call instead, and the run says
    what to change in one line."""
    script = tmp_path / "evaluate_toy.py"
    script.write_text(UNGUARDED)
    tests = str(Path(__file__).parent)
    path = os.pathsep.join([tests, *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": path}, timeout=300, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        f"WorkerStartError: the env workers import {script}, which calls evaluate() when "
        'imported: put the call under if __name__ == "__main__":'
    ], done.stderr
    assert "bootstrapping" not in done.stderr


def test_flags_take_their_ini_spellings(tmp_path: Path):
    assert validation.build(root=tmp_path, sync="no").sync is False
    assert validation.build(root=tmp_path, sync="True").sync is True


def test_default_batch_size_is_the_plugins_auto_and_one_for_a_policy_object(tmp_path: Path):
    run = {"tasks": ["reach-v3"], "episodes": 2, "max_steps": 5, "sync": True}
    by_spec = evaluate("metaworld", "scripted", **run)  # type: ignore[arg-type]
    assert by_spec.metrics["run"]["batch_size"] == 0
    metaworld = catalog.get("metaworld")
    expert = metaworld.scripted_policy(by_spec.results[0].task, num_envs=1)
    by_object = evaluate("metaworld", expert, **run)  # type: ignore[arg-type]
    assert by_object.metrics["run"]["batch_size"] == 1
    assert [e["success"] for e in by_object.metrics["results"][0]["episodes"]] == [
        e["success"] for e in by_spec.metrics["results"][0]["episodes"]
    ]


def test_record_paths_that_cannot_be_written_fail_before_any_episode(tmp_path: Path):
    link = tmp_path / "dataset"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(OptionError, match=r"^--benchmark-record: .*dataset is a dangling symbolic"):
        evaluate("metaworld", tasks=["reach-v3"], record=link)
    # root may write almost anywhere; only an attempt sees that /proc takes no new files.
    with pytest.raises(OptionError, match=r"^--benchmark-record: cannot write /proc/dataset: "):
        evaluate("metaworld", tasks=["reach-v3"], record="/proc/dataset")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset"]


def test_every_option_that_shapes_a_run_has_its_keyword(tmp_path: Path):
    """settle_steps, the episode list, the shard, the time limit and videos, as their options
    do in a pytest session: two Meta-World tasks, shard 2 of 2 keeps one; episodes 1 and 3
    only; two settle steps before the policy acts (the run block and the step count say so);
    an MP4 per episode; a limit that the task cannot meet records it as timed out."""
    common = {"tasks": ["reach-v3", "push-v3"], "max_steps": 40}
    run = evaluate(
        "metaworld", **common, shard=(2, 2), episode_indices=[3, 1], settle_steps=2,
        video="all", metrics=tmp_path / "m.json",
    )  # fmt: skip
    (result,) = run.results
    assert result.task.id == "metaworld/reach-v3"  # tasks sorted by id: push, then reach
    assert [e.index for e in result.episodes] == [1, 3]
    block = run.metrics["run"]
    assert (block["shard"], block["episode_indices"], block["settle_steps"]) == ([2, 2], [1, 3], 2)
    assert block["video"] == "all"
    videos = sorted((tmp_path / "videos").rglob("*.mp4"))
    assert [v.name for v in videos] == ["episode_0001.mp4", "episode_0003.mp4"]
    # A task past its limit raises, as any task error does in the API, its row written first.
    with pytest.raises(TaskTimeout, match=r"metaworld/push-v3 timed out after 0\.001 s"):
        evaluate("metaworld", **common, shard="1/2", episodes=2, timeout=0.001,
                 metrics=tmp_path / "late.json")  # fmt: skip
    (row,) = json.loads((tmp_path / "late.json").read_text())["results"]
    assert row["id"] == "metaworld/push-v3" and row["error"].startswith("TaskTimeout: ")


def test_progress_lines_go_to_stderr_as_the_plugins_do(capsys: pytest.CaptureFixture[str]):
    """``progress=0``: a line after every episode (the plugin's, without a worker's name);
    by default none."""
    import toybench  # noqa: F401  (registers the toy benchmark in this process)

    evaluate("toy", tasks=["walk"], episodes=3, batch_size=1, sync=True, progress=0)
    lines = capsys.readouterr().err.splitlines()
    assert [line.rsplit(",", 1)[0] for line in lines] == [
        f"toy/walk: {i}/3 episodes, {i} successes" for i in (1, 2, 3)
    ], lines
    assert all(line.endswith(" s") for line in lines), lines
    evaluate("toy", tasks=["walk"], episodes=3, batch_size=1, sync=True)
    assert capsys.readouterr().err == ""


def test_debug_runs_one_env_and_writes_each_steps_trace(tmp_path: Path):
    import toybench  # noqa: F401  (registers the toy benchmark in this process)

    run = evaluate("toy", tasks=["walk"], episodes=2, debug=True, metrics=tmp_path / "m.json")
    (result,) = run.results
    assert result.batch_size == 1 and run.metrics["run"]["debug"] is True
    lines = (tmp_path / "traces" / "toy" / "walk.jsonl").read_text().splitlines()
    steps = [json.loads(line) for line in lines]
    assert len(steps) == sum(e.steps for e in result.episodes)
    assert {s["episode"] for s in steps} == {0, 1}
