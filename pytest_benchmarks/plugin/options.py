"""The ``--benchmark-*`` options: their table, registration, ini equivalents and reading.

Every option is validated by ``validation`` (one line naming the option and what is valid),
before any test is collected or any simulator is built.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_benchmarks.core.selection import Selection, select
from pytest_benchmarks.core.settings import (
    DEFAULT_ALPHA,
    DEFAULT_EPISODES,
    DEFAULT_GATE,
    DEFAULT_METRICS,
    DEFAULT_POLICY,
    DEFAULT_SEED,
    Settings,
)
from pytest_benchmarks.core.validation import OptionError, check_metrics_path, check_record_path
from pytest_benchmarks.core.validation import settings as validate

GROUP = "benchmarks"
GROUP_HELP = "robot-policy simulation benchmarks (pytest-benchmarks)"

# option name -> (ini type, help); every option also reads the ini key with dashes as underscores.
OPTIONS: dict[str, tuple[str, str]] = {
    "--benchmark-env": (
        "string",
        "benchmarks to run, comma separated (default: every benchmark whose extra is installed)",
    ),
    "--benchmark-task": (
        "string",
        "tasks or groups to run, comma separated, e.g. push-v3,MT10 (default: the benchmark's own)",
    ),
    "--benchmark-episodes": ("string", f"episodes per task (default {DEFAULT_EPISODES})"),
    "--benchmark-batch-size": (
        "string",
        "envs stepped together per task; 0 = auto: floor(0.7 x CPUs per worker), "
        "capped by episodes and 64 (default 0)",
    ),
    "--benchmark-seed": ("string", f"base seed; episode i uses seed + i (default {DEFAULT_SEED})"),
    "--benchmark-policy": (
        "string",
        "policy spec: scripted (the benchmark's expert), scripted+noise:FRACTION (the expert "
        "with a random action in that fraction of steps), random, noop, hub:REPO_ID[@REVISION] "
        "(a Hugging Face checkpoint), lerobot:REPO_ID_OR_DIR (a LeRobot policy), "
        "module:package.module:factory (factory(config, num_envs) returns the policy), or a "
        f"checkpoint directory (./path or /path) (default {DEFAULT_POLICY})",
    ),
    "--benchmark-device": (
        "string",
        "where learned policies run: auto (cuda when available), cpu or cuda (default auto)",
    ),
    "--benchmark-max-steps": ("string", "episode step limit (default: the benchmark's own)"),
    "--benchmark-metrics": ("string", f"metrics JSON path (default {DEFAULT_METRICS})"),
    "--benchmark-obs": (
        "string",
        "observations: state (no rendering), pixels (camera images too) or lerobot (the layout "
        "of LeRobot's own wrapper for the benchmark); default: lerobot for lerobot: policies, "
        "else the benchmark's own (LIBERO pixels, Meta-World state)",
    ),
    "--benchmark-image-size": ("string", "camera image size, N or HxW (default 128)"),
    "--benchmark-render": (
        "string",
        "camera rendering: faithful (the model's own: multisampling, shadows, reflections) or "
        "fast (none of them, coarser meshes: 4.5-15x quicker on a CPU, other pixels; snapshots "
        "and compare keep the two apart) (default faithful)",
    ),
    "--benchmark-camera-map": (
        "string",
        "rename cameras, e.g. agentview_image=camera1,robot0_eye_in_hand_image=camera2, or as "
        "JSON like lerobot-eval's --env.camera_name_mapping",
    ),
    "--benchmark-rename-map": (
        "string",
        "lerobot: policies: rename observation features before the policy's pre-processor, "
        "like lerobot-eval's --rename_map (JSON, or OLD=NEW[,...]), e.g. "
        "observation.image=observation.images.camera1",
    ),
    "--benchmark-settle-steps": (
        "string",
        "no-op steps after each reset before the policy acts (default: the benchmark's own)",
    ),
    "--benchmark-episode": (
        "string",
        "run exactly these episode indices (same seeds and initial states as in a full run), "
        "one env, in the test process, so a debugger and print() work",
    ),
    "--benchmark-video": (
        "string",
        "write an MP4 per episode: none, failures or all (default none), beside the metrics JSON",
    ),
    "--benchmark-progress": (
        "string",
        "seconds between progress lines of a running task (episodes done, successes); "
        "0 = after every episode (default 10)",
    ),
    "--benchmark-timeout": (
        "string",
        "seconds a task may take (env start-up and all its episodes); a task past it is stopped, "
        "its env workers killed, and it is recorded as timed out (default: no limit)",
    ),
    "--benchmark-shard": (
        "string",
        "run only shard I of N: the selected tasks, sorted by id, whose position mod N is I-1 "
        "(for CI matrices; join the shards' metrics with pytest-benchmarks merge)",
    ),
    "--benchmark-gate": (
        "string",
        "snapshot gate: stat (fail on a significant drop), exact (fail when any episode that "
        f"succeeded in the snapshot fails now) or off (default {DEFAULT_GATE})",
    ),
    "--benchmark-alpha": (
        "string",
        "significance level of the stat gate for the whole session: the chance of any false "
        "alarm, shared by Holm's step-down over the tasks that can fail "
        f"(default {DEFAULT_ALPHA})",
    ),
    "--benchmark-gate-power": (
        "string",
        "when a task's stat gate cannot detect any drop with this run's episodes: warn (say so "
        "in the verdict and the summary, with the episodes it needs) or fail its test "
        "(default warn)",
    ),
    "--benchmark-record": (
        "string",
        "write every evaluated episode (what the policy saw, its actions, reward, done, success) "
        "into a new LeRobotDataset in DIR, in task and episode order (needs the lerobot extra)",
    ),
    "--benchmark-record-only": (
        "string",
        "with --benchmark-record: all episodes, or success: only the successful ones "
        "(demonstrations) (default all)",
    ),
}

METAVARS = {
    "--benchmark-env": "NAME[,NAME]",
    "--benchmark-task": "TASK[,TASK]",
    "--benchmark-episodes": "N",
    "--benchmark-batch-size": "N",
    "--benchmark-seed": "N",
    "--benchmark-policy": "SPEC",
    "--benchmark-device": "{auto,cpu,cuda}",
    "--benchmark-max-steps": "N",
    "--benchmark-metrics": "PATH",
    "--benchmark-obs": "{state,pixels,lerobot}",
    "--benchmark-image-size": "N|HxW",
    "--benchmark-render": "{faithful,fast}",
    "--benchmark-camera-map": "CAM=NAME[,...]",
    "--benchmark-rename-map": "OLD=NEW[,...]|JSON",
    "--benchmark-settle-steps": "N",
    "--benchmark-episode": "I[,J...]",
    "--benchmark-video": "{none,failures,all}",
    "--benchmark-progress": "SECONDS",
    "--benchmark-timeout": "SECONDS",
    "--benchmark-shard": "I/N",
    "--benchmark-gate": "{stat,exact,off}",
    "--benchmark-alpha": "LEVEL",
    "--benchmark-gate-power": "{warn,fail}",
    "--benchmark-record": "DIR",
    "--benchmark-record-only": "{all,success}",
}


#: Flags (no value); each also reads the ini key with dashes as underscores.
FLAGS: dict[str, str] = {
    "--benchmark-sync": "step every env in this process (SyncVectorEnv), never in worker processes",
    "--benchmark-debug": "batch size 1, no worker processes, and a per-step trace (action, "
    "reward, success) in a JSON Lines file per task beside the metrics JSON",
    "--benchmark-snapshot-replace": "with --snapshot-update: replace snapshots even by a run of "
    "fewer episodes or other settings (seed, step limit, observations); without it they are kept",
    "--benchmark-resume": "carry on the run whose metrics JSON is at --benchmark-metrics: keep "
    "its finished tasks, run only the episodes it lacks (same settings and policy required)",
    "--benchmark-batched-inference": "lerobot: policies: slots whose episodes are at the same "
    "step of their action chunk share one forward pass (faster; records may differ from "
    "batch-of-one inference, so it is part of a snapshot's settings)",
}


def add_options(parser: pytest.Parser) -> None:
    """Register the options in their own ``--help`` group, beside pytest-benchmark's."""
    group = parser.getgroup(GROUP, GROUP_HELP)
    for flag, (ini_type, text) in OPTIONS.items():
        dest = _dest(flag)
        group.addoption(flag, dest=dest, default=None, metavar=METAVARS[flag], help=text)
        parser.addini(dest, text, type=ini_type, default=None)  # type: ignore[arg-type]
    for flag, text in FLAGS.items():
        dest = _dest(flag)
        group.addoption(flag, dest=dest, action="store_true", default=None, help=text)
        parser.addini(dest, f"like {flag}", type="bool", default=False)


#: Options whose ini values are paths, taken relative to the ini file's directory.
PATH_OPTIONS = ("--benchmark-metrics", "--benchmark-record")


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def read(config: pytest.Config) -> dict[str, Any]:
    """Each option's raw value, the command line before the ini file; unset options left out."""
    raw: dict[str, Any] = {}
    for flag in OPTIONS:
        dest = _dest(flag)
        value = config.getoption(dest)
        if isinstance(value, str) and not value.strip():
            raise OptionError(f"{flag}: empty value; give one, or leave the option out")
        if value is None:
            value = config.getini(dest)  # unset in the ini file: ""
            if flag in PATH_OPTIONS and value and config.inipath is not None:
                # As pytest does for its own ini paths: relative to the ini file's directory.
                value = str(config.inipath.parent / os.path.expanduser(value))
        if value not in ("", None):
            raw[flag] = value
    for flag in FLAGS:
        dest = _dest(flag)
        raw[flag] = bool(config.getoption(dest) or config.getini(dest))
    return raw


def load(config: pytest.Config, check_metrics: bool) -> tuple[Settings, Selection]:
    """The session's settings and selection; pytest.UsageError with one line if anything is bad.

    ``check_metrics``: this process writes the metrics file (the controller), so check it now.
    """
    try:
        options = validate(read(config), config.rootpath)
        if check_metrics:
            check_metrics_path(options.metrics)
            check_record_path(options.record, options.resume)
        return options, select(options)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
