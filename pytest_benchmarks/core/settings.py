"""The run's settings, validated: what every layer reads, whoever parsed them (plugin or API).

``Settings`` is also the option registry: each field declares its ``--benchmark-*`` option
(``core.options.Option``), so the plugin's options and ini keys, the checks, the API's
keywords, the metrics JSON's run block, resume's comparison, the snapshot settings and the
rerun command all come from one declaration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog, values
from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.options import Option, registry, setting
from pytest_benchmarks.core.policy_spec import Loading, PolicySpec, PolicySpecError
from pytest_benchmarks.core.tasks import DEFAULT_IMAGE_SIZE, EnvConfig, TaskRef, did_you_mean
from pytest_benchmarks.core.values import OptionError

DEFAULT_EPISODES = 10
DEFAULT_SEED = 1000
DEFAULT_POLICY = "scripted"
DEFAULT_METRICS = "benchmark-results/metrics.json"
DEFAULT_GATE = "stat"
DEFAULT_ALPHA = 0.05
DEFAULT_PROGRESS_S = 10.0
#: The longest --benchmark-timeout: timers and waits past it overflow the platform's time_t.
MAX_TIMEOUT_S = 1e8
#: Upper bounds: seeds stay within numpy's and the simulators' 32-bit range after adding the
#: episode index; a plan of more episodes than this is a typo, not a benchmark.
MAX_SEED = 2**31 - 1
MAX_EPISODES = 1_000_000
#: state: no rendering; pixels: camera images too; lerobot: the observation layout of LeRobot's
#: own wrapper for the benchmark (the default for lerobot: policies where a benchmark has one).
OBS_MODES = ("state", "pixels", "lerobot")
VIDEO_MODES = ("none", "failures", "all")
#: faithful: the models' own rendering; fast: no multisampling, shadows or reflections.
RENDER_MODES = ("faithful", "fast")
#: Which episodes --benchmark-record keeps: every one, or the successful ones.
RECORD_ONLY = ("all", "success")
DEVICES = ("auto", "cpu", "cuda")
#: --benchmark-policy-server: on for a CUDA device under xdist, always, never.
SERVER_MODES = ("auto", "on", "off")
DEFAULT_SERVER_WAIT_MS = 5.0
#: Snapshot gate modes: a significance test, per-episode comparison, or none.
GATE_MODES = ("stat", "exact", "off")
#: What a task whose gate cannot fail at this run's size does: warn in the summary, or fail.
GATE_POWER = ("warn", "fail")


def _policy(flag: str, value: Any) -> PolicySpec:
    if isinstance(value, PolicySpec):
        return value
    try:
        return PolicySpec.parse(str(value))
    except PolicySpecError as exc:
        raise OptionError(f"{flag}: {exc}") from None


def _benchmarks(flag: str, value: Any) -> tuple[str, ...] | None:
    chosen = values.name_list(flag, value)
    for name in chosen or ():
        if not catalog.exists(name):
            raise OptionError(
                f"{flag}: unknown benchmark {name!r}"
                f"{did_you_mean(name, catalog.names())}; valid: {catalog.valid_names()}"
            )
    return chosen


def check_cuda_here(flag: str = "--benchmark-device") -> None:
    """cuda for a run whose policies act in this machine's processes: torch must see a GPU."""
    try:
        import torch
    except ImportError:
        raise OptionError(
            f"{flag}: cuda needs torch: pip install 'pytest-benchmarks[policies]'"
        ) from None
    if not torch.cuda.is_available():
        raise OptionError(f"{flag}: cuda, but torch sees no CUDA device; use cpu")


def _ray_address(flag: str, value: Any) -> str:
    address = str(value).strip()
    host, _, port = address.rpartition(":")
    if address == "auto" or (host and port.isdigit() and "/" not in host):
        return address
    raise OptionError(
        f"{flag}: {address!r} is neither auto nor a Ray head's HOST:PORT (e.g. 10.0.0.5:6379; "
        "the session runs on a node of the cluster, so ray:// client addresses are not taken)"
    )


#: Where the image size came from when no option gave it and no checkpoint declared one.
DEFAULT_SOURCE = "the default"
#: ... when --benchmark-image-size (or the API's image_size) gave it.
OPTION_SOURCE = "--benchmark-image-size"


@dataclass(frozen=True)
class Settings:
    """Validated benchmark settings for one run: the option registry (each field declares its
    ``--benchmark-*`` option, ini key, API keyword and checks) and what every layer reads."""

    # fmt: off
    envs: tuple[str, ...] | None = setting(None, Option(
        "benchmarks to run, comma separated (default: every benchmark whose extra is installed)",
        _benchmarks, "NAME[,NAME]", name="env", resume=True, api="benchmarks",
    ))
    tasks: tuple[str, ...] | None = setting(None, Option(
        "tasks or groups to run, comma separated, e.g. push-v3,MT10 (default: the benchmark's "
        "own); each benchmark that --benchmark-env names must own one of them",
        values.name_list, "TASK[,TASK]", name="task", resume=True, api="tasks",
    ))
    episodes: int = setting(DEFAULT_EPISODES, Option(
        f"episodes per task (default {DEFAULT_EPISODES})",
        values.integer(1, MAX_EPISODES), "N", compare="note", api="episodes",
    ))
    batch_size: int = setting(0, Option(
        "envs stepped together per task; 0 = auto: floor(0.7 x CPUs per worker), "
        "capped by episodes and 64 (default 0)",
        values.integer(0), "N", api="batch_size",
    ))
    sync: bool = setting(False, Option(
        "step every env in this process (SyncVectorEnv), never in worker processes",
        values.flag, api="sync",
    ))
    seed: int = setting(DEFAULT_SEED, Option(
        f"base seed; episode i uses seed + i (default {DEFAULT_SEED})",
        values.integer(0, MAX_SEED), "N", compare="note", rerun="always", snapshot="always",
        api="seed",
    ))
    policy: PolicySpec = setting(PolicySpec.parse(DEFAULT_POLICY), Option(
        "policy spec: scripted (the benchmark's expert), scripted+noise:FRACTION (the expert "
        "with a random action in that fraction of steps), random, noop, hub:REPO_ID[@REVISION] "
        "(a Hugging Face checkpoint), lerobot:REPO_ID_OR_DIR (a LeRobot policy), "
        "module:package.module:factory (factory(config, num_envs) returns the policy), or a "
        f"checkpoint directory (./path or /path) (default {DEFAULT_POLICY})",
        _policy, "SPEC", compare="note", rerun="always", api="policy", dump=str,
    ))
    max_steps: int | None = setting(None, Option(
        "episode step limit (default: the benchmark's own)",
        values.integer(1), "N", compare="refuse", rerun="changed", snapshot="always",
        api="max_steps",
    ))
    metrics: Path = setting(Path(DEFAULT_METRICS), Option(
        f"metrics JSON path (default {DEFAULT_METRICS})",
        values.path, "PATH", ini_path=True, api="metrics", run_block=False,
    ))
    device: str = setting("auto", Option(
        "where learned policies run: auto (cuda when available), cpu or cuda (default auto)",
        values.choice(DEVICES), "{auto,cpu,cuda}", api="device",
    ))
    obs: str | None = setting(None, Option(
        "observations: state (no rendering), pixels (camera images too) or lerobot (the layout "
        "of LeRobot's own wrapper for the benchmark); default: lerobot for lerobot: policies, "
        "else the benchmark's own (LIBERO pixels, Meta-World state)",
        values.choice(OBS_MODES), "{state,pixels,lerobot}", compare="refuse", rerun="changed",
        snapshot="always", api="obs",
    ))
    image_size: tuple[int, int] = setting(DEFAULT_IMAGE_SIZE, Option(
        "camera image size, N or HxW, each side at most 16384 (default 128)",
        values.image_size, "N|HxW", compare="refuse", rerun="changed", snapshot="pixels_or_none",
        api="image_size", show=values.size_text,
    ))
    settle_steps: int | None = setting(None, Option(
        "no-op steps after each reset before the policy acts (default: the benchmark's own)",
        values.integer(0), "N", compare="refuse", rerun="changed", snapshot="always",
        api="settle_steps",
    ))
    render: str = setting("faithful", Option(
        "camera rendering: faithful (the model's own: multisampling, shadows, reflections) or "
        "fast (none of them, coarser meshes: 4.5-15x quicker on a CPU, other pixels; snapshots "
        "and compare keep the two apart) (default faithful)",
        values.choice(RENDER_MODES), "{faithful,fast}", compare="refuse", rerun="changed",
        snapshot="pixels", api="render",
    ))
    camera_map: tuple[tuple[str, str], ...] = setting((), Option(
        "rename cameras, e.g. agentview_image=camera1,robot0_eye_in_hand_image=camera2, or as "
        "JSON like lerobot-eval's --env.camera_name_mapping",
        values.pairs('agentview_image=camera1 or \'{"agentview_image": "camera1"}\''),
        "CAM=NAME[,...]", compare="refuse", rerun="changed", snapshot="set",
        api="camera_map", dump=values.pairs_json,
        show=values.pairs_text,
    ))
    #: lerobot:TYPE benchmarks: fields of LeRobot's env config (``lerobot-eval --env.FIELD``).
    env_args: tuple[tuple[str, str], ...] = setting((), Option(
        "lerobot:TYPE benchmarks: set fields of LeRobot's env config as lerobot-eval's "
        "--env.FIELD=VALUE does, e.g. obs_type=pixels_agent_pos,episode_length=100 (JSON for "
        "values with commas)",
        values.env_fields('obs_type=pixels_agent_pos or \'{"render_resolution": "[480,480]"}\''),
        "FIELD=VALUE[,...]|JSON", name="env_arg", compare="refuse", rerun="changed",
        snapshot="set", api="env_args", dump=values.pairs_json, show=values.pairs_text,
    ))
    #: LeRobot policies: renames of observation features before the policy's pre-processor
    #: (``lerobot-eval --rename_map``).
    rename_map: tuple[tuple[str, str], ...] = setting((), Option(
        "lerobot: policies: rename observation features before the policy's pre-processor, "
        "like lerobot-eval's --rename_map (JSON, or OLD=NEW[,...]), e.g. "
        "observation.image=observation.images.camera1",
        values.pairs('\'{"observation.image": "observation.images.camera1"}\''),
        "OLD=NEW[,...]|JSON", compare="refuse", rerun="changed", snapshot="set", api="rename_map",
        dump=values.pairs_json, show=values.pairs_text,
    ))
    #: Episode indices to run instead of range(episodes).
    episode_indices: tuple[int, ...] | None = setting(None, Option(
        "run exactly these episode indices (same seeds and initial states as in a full run), "
        "one env, in the test process, so a debugger and print() work",
        values.indices, "I[,J...]", name="episode", resume=True, api="episode_indices",
    ))
    video: str = setting("none", Option(
        "write an MP4 per episode: none, failures or all (default none), beside the metrics JSON",
        values.choice(VIDEO_MODES), "{none,failures,all}", api="video",
    ))
    progress_s: float = setting(DEFAULT_PROGRESS_S, Option(
        "seconds between progress lines of a running task (episodes done, successes); "
        "0 = after every episode (default 10)",
        values.number(lambda x: 0 <= x < math.inf, "a number of seconds >= 0"), "SECONDS",
        name="progress", run_block=False, api="progress",
    ))
    timeout: float | None = setting(None, Option(
        "seconds a task may take (env start-up and all its episodes); a task past it is stopped, "
        "its env workers killed, and it is recorded as timed out (default: no limit)",
        values.number(
            lambda x: 0 < x <= MAX_TIMEOUT_S,
            f"a number of seconds > 0 and at most {MAX_TIMEOUT_S:.0f} (about three years)",
        ), "SECONDS", api="timeout",
    ))
    shard: tuple[int, int] | None = setting(None, Option(
        "run only shard I of N: the selected tasks, sorted by id, whose position mod N is I-1 "
        "(for CI matrices; join the shards' metrics with pytest-benchmarks merge)",
        values.shard, "I/N", resume=True, api="shard",
    ))
    gate: str = setting(DEFAULT_GATE, Option(
        "snapshot gate: stat (fail on a significant drop), exact (fail when any episode that "
        f"succeeded in the snapshot fails now) or off (default {DEFAULT_GATE})",
        values.choice(GATE_MODES), "{stat,exact,off}",
    ))
    alpha: float = setting(DEFAULT_ALPHA, Option(
        "significance level of the stat gate for the whole session: the chance of any false "
        "alarm, shared by Holm's step-down over the tasks that can fail "
        f"(default {DEFAULT_ALPHA})",
        values.number(lambda x: 0 < x < 1, "a level between 0 and 1 (e.g. 0.05)"), "LEVEL",
    ))
    #: warn or fail when a task's gate cannot detect any drop with this run's episodes.
    gate_power: str = setting("warn", Option(
        "when a task's stat gate cannot detect any drop with this run's episodes: warn (say so "
        "in the verdict and the summary, with the episodes it needs) or fail (its test fails; "
        "pytest-benchmarks compare exits 1) (default warn)",
        values.choice(GATE_POWER), "{warn,fail}", run_block=False,
    ))
    #: Write every evaluated episode into a LeRobotDataset here (a new directory).
    record: Path | None = setting(None, Option(
        "write every evaluated episode (what the policy saw, its actions, reward, done, success) "
        "into a new LeRobotDataset in DIR, in task and episode order (needs the lerobot extra)",
        values.path, "DIR", ini_path=True, api="record", resume=True,
    ))
    #: all, or success: only the episodes that succeeded (demonstrations).
    record_only: str = setting("all", Option(
        "with --benchmark-record: all episodes, or success: only the successful ones "
        "(demonstrations) (default all)",
        values.choice(RECORD_ONLY), "{all,success}", api="record_only", resume=True,
    ))
    debug: bool = setting(False, Option(
        "batch size 1, no worker processes, and a per-step trace (action, reward, success) in a "
        "JSON Lines file per task beside the metrics JSON",
        values.flag, api="debug",
    ))
    #: --snapshot-update may replace a snapshot by one of fewer episodes or other settings.
    #: Stop each task as soon as its gate is decided (``metrics.gate.sequential``).
    sequential: bool = setting(False, Option(
        "stop each task as soon as the gate is decided against its snapshot, episode pair by "
        "pair, with anytime-valid tests (REGRESSED, or HELD: no drop as large as 20 points), "
        "else judge it by the fixed paired test at its plan's end; --benchmark-episodes is "
        "then the most a task runs (docs/statistics.md)",
        values.flag, compare="note", resume=True,
    ))
    snapshot_replace: bool = setting(False, Option(
        "with --snapshot-update: replace snapshots even by a run of fewer episodes or other "
        "settings (seed, step limit, observations); without it they are kept",
        values.flag, run_block=False,
    ))
    #: Carry on the run in the metrics JSON: keep its finished tasks and episodes.
    resume: bool = setting(False, Option(
        "carry on the run whose metrics JSON is at --benchmark-metrics: keep its finished "
        "tasks, run only the episodes it lacks (same settings and policy required)",
        values.flag, api="resume",
    ))
    #: LeRobot policies: slots at the same phase share one forward pass (records may then
    #: depend on the batch size; see ``policies.slot_batch``).
    batched_inference: bool = setting(False, Option(
        "lerobot: policies: slots whose episodes are at the same step of their action chunk "
        "share one forward pass (faster; records may differ from batch-of-one inference, so it "
        "is part of a snapshot's settings; with one env per task nothing is shared, and the run "
        "records batched_inference false)",
        values.flag, compare="refuse", rerun="changed", snapshot="set", api="batched_inference",
    ))
    #: One process per device holds a lerobot: policy and acts for every worker's slots
    #: together (``serving``); auto: on for a GPU under xdist. Resolved to on or off for a run.
    policy_server: str = setting("auto", Option(
        "lerobot: policies: one policy server per device loads the policy once and acts for "
        "every xdist worker's env slots together, as --benchmark-batched-inference does; on "
        "Ray, one per device on each node, for the node's tasks (auto: on for a CUDA device "
        "under xdist or on Ray; default auto)",
        values.choice(SERVER_MODES), "{auto,on,off}", api="policy_server",
    ))
    #: How long a policy server holds a gathered request for the other workers' (a bound).
    policy_server_wait: float = setting(DEFAULT_SERVER_WAIT_MS, Option(
        "milliseconds a policy server waits, after the first request of a step, for the other "
        "workers' requests before it acts (it acts at once when every active worker's is in; "
        "default 5); refused where no server can run, and said at the session's start where "
        "auto starts none",
        values.number(lambda x: 0 <= x < math.inf, "a number of milliseconds >= 0"), "MS",
        api="policy_server_wait",
    ))
    #: Run the tasks on a Ray cluster instead of in this process or xdist workers.
    ray: str | None = setting(None, Option(
        "run each task as a Ray task on the cluster whose head is at ADDRESS (HOST:PORT), or "
        "auto (the one RAY_ADDRESS or a local `ray start` names): placed on a node with free "
        "CPUs (a GPU for --benchmark-device=cuda); a task whose node dies is carried on "
        "elsewhere from its finished episodes (needs the ray extra; docs/scaling.md)",
        _ray_address, "auto|ADDRESS", api="ray", run_block=False,
    ))
    # fmt: on
    #: Where ``image_size`` came from: the option, the default, or a LeRobot checkpoint's
    #: config (``policies.declared``).
    image_size_from: str = field(default=OPTION_SOURCE, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.policy, str):  # built by hand with a spec's text
            object.__setattr__(self, "policy", _policy("--benchmark-policy", self.policy))

    def snapshot_settings(self, task: TaskRef) -> dict[str, Any]:
        """The settings a task's outcome depends on, as its snapshot records them: the
        options with a snapshot rule, at the values the task's env resolves them to (the
        policy's own settings as given)."""
        config = self.env_config(task)
        pixels = config.obs != "state"
        recorded: dict[str, Any] = {}
        for option in OPTIONS:
            source = config if hasattr(config, option.field) else self
            value = getattr(source, option.field)
            rule = option.snapshot
            if rule is None or (rule == "pixels" and not pixels):
                continue
            if rule == "set" and value == option.default:
                continue
            dumped = option.dump(value)
            recorded[option.field] = None if rule == "pixels_or_none" and not pixels else dumped
        return recorded

    @property
    def image_size_declared(self) -> bool:
        """The image size is the one a LeRobot checkpoint declares (no option gave one)."""
        return self.image_size_from not in (DEFAULT_SOURCE, OPTION_SOURCE)

    @property
    def indices(self) -> tuple[int, ...]:
        """The episode indices each task runs."""
        return self.episode_indices or tuple(range(self.episodes))

    @property
    def single_env(self) -> bool:
        """One env in the calling process: ``--benchmark-debug`` or ``--benchmark-episode``."""
        return self.debug or self.episode_indices is not None

    @property
    def planned(self) -> int:
        """How many episodes each task's plan holds."""
        return len(self.indices)

    @property
    def loading(self) -> Loading:
        """How a learned policy is loaded: the settings the policy reads and the env does not."""
        return Loading(self.device, self.rename_map, self.batched_inference)

    def env_config(self, task: TaskRef) -> EnvConfig:
        """What the task's env needs from these settings (the plugin's and the API's)."""
        benchmark = catalog.get(task.env)
        config = EnvConfig(
            task=task,
            max_steps=self.max_steps or benchmark.default_max_steps(task),
            seed=self.seed,
            obs=self.obs or default_obs(benchmark, self.policy),
            image_size=self.image_size,
            render=self.render,
            settle_steps=self.settle_steps,
            camera_map=self.camera_map,
            env_args=self.env_args,
            video=self.video,
            video_dir=str(self.metrics.parent / "videos"),
            privileged=self.policy.expert_based,
        )
        return benchmark.describe(config)

    def as_dict(self) -> dict[str, Any]:
        """Every setting as the metrics JSON's run block holds it."""
        return {o.field: o.dump(getattr(self, o.field)) for o in OPTIONS if o.run_block}


#: The option registry: one entry per ``Settings`` field that an option sets.
OPTIONS: tuple[Option, ...] = registry(Settings)


def default_obs(benchmark: Benchmark, policy: PolicySpec) -> str:
    """The observation mode when none is asked for: LeRobot's layout for a LeRobot policy where
    the benchmark offers it, else the benchmark's own default."""
    if policy.is_lerobot and "lerobot" in benchmark.observation_modes:
        return "lerobot"
    return benchmark.observation_modes[0]
