"""The run's settings, validated: what every layer reads, whoever parsed them (plugin or API)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.policy_spec import PolicySpecError, expert_based, parse_spec
from pytest_benchmarks.core.tasks import DEFAULT_IMAGE_SIZE, EnvConfig, TaskRef

DEFAULT_EPISODES = 10
DEFAULT_SEED = 1000
DEFAULT_POLICY = "scripted"
DEFAULT_METRICS = "benchmark-results/metrics.json"
DEFAULT_GATE = "stat"
DEFAULT_ALPHA = 0.05
DEFAULT_PROGRESS_S = 10.0
#: state: no rendering; pixels: camera images too; lerobot: the observation layout of LeRobot's
#: own wrapper for the benchmark (the default for lerobot: policies where a benchmark has one).
OBS_MODES = ("state", "pixels", "lerobot")
VIDEO_MODES = ("none", "failures", "all")
#: faithful: the models' own rendering; fast: no multisampling, shadows or reflections.
RENDER_MODES = ("faithful", "fast")
#: Which episodes --benchmark-record keeps: every one, or the successful ones.
RECORD_ONLY = ("all", "success")
DEVICES = ("auto", "cpu", "cuda")
#: Snapshot gate modes: a significance test, per-episode comparison, or none.
GATE_MODES = ("stat", "exact", "off")
#: What a task whose gate cannot fail at this run's size does: warn in the summary, or fail.
GATE_POWER = ("warn", "fail")


@dataclass(frozen=True)
class Settings:
    """Validated benchmark options for one pytest session."""

    envs: tuple[str, ...] | None
    tasks: tuple[str, ...] | None
    episodes: int
    batch_size: int
    sync: bool
    seed: int
    policy: str
    max_steps: int | None
    metrics: Path
    obs: str | None = None
    image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE
    render: str = "faithful"
    camera_map: tuple[tuple[str, str], ...] = ()
    #: LeRobot policies: renames of observation features before the policy's pre-processor
    #: (``lerobot-eval --rename_map``).
    rename_map: tuple[tuple[str, str], ...] = ()
    settle_steps: int | None = None
    gate: str = DEFAULT_GATE
    alpha: float = DEFAULT_ALPHA
    #: warn or fail when a task's gate cannot detect any drop with this run's episodes.
    gate_power: str = "warn"
    #: --snapshot-update may replace a snapshot by one of fewer episodes or other settings.
    snapshot_replace: bool = False
    shard: tuple[int, int] | None = None
    timeout: float | None = None
    #: Episode indices to run instead of range(episodes).
    episode_indices: tuple[int, ...] | None = None
    video: str = "none"
    progress_s: float = DEFAULT_PROGRESS_S
    debug: bool = False
    device: str = "auto"
    #: Write every evaluated episode into a LeRobotDataset here (a new directory).
    record: Path | None = None
    #: all, or success: only the episodes that succeeded (demonstrations).
    record_only: str = "all"
    #: Carry on the run in the metrics JSON: keep its finished tasks and episodes.
    resume: bool = False
    #: LeRobot policies: slots at the same phase share one forward pass (records may then
    #: depend on the batch size; see ``policies.slot_batch``).
    batched_inference: bool = False
    #: Where ``image_size`` came from when no option gave it (a LeRobot checkpoint's config).
    image_size_from: str | None = field(default=None, compare=False)

    def snapshot_settings(self, task: TaskRef) -> dict[str, Any]:
        """The settings a task's outcome depends on, as its snapshot records them."""
        config = self.env_config(task)
        return {
            "seed": config.seed,
            "max_steps": config.max_steps,
            "obs": config.obs,
            "image_size": None if config.obs == "state" else list(config.image_size),
            "settle_steps": config.settle_steps,
            # Only where pixels decide the outcome: state snapshots stay as they were.
            **({} if config.obs == "state" else {"render": config.render}),
            # What a LeRobot policy's pre-processor renames changes what it reads.
            **({"rename_map": dict(config.rename_map)} if config.rename_map else {}),
            # Shared forward passes may change the records: never gated against unshared ones.
            **({"batched_inference": True} if config.batched_inference else {}),
        }

    @property
    def indices(self) -> tuple[int, ...]:
        """The episode indices each task runs."""
        return self.episode_indices or tuple(range(self.episodes))

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
            rename_map=self.rename_map,
            batched_inference=self.batched_inference,
            video=self.video,
            video_dir=str(self.metrics.parent / "videos"),
            privileged=expert_based(self.policy),
        )
        return benchmark.describe(config)

    def as_dict(self) -> dict[str, Any]:
        return {
            "envs": list(self.envs) if self.envs else None,
            "tasks": list(self.tasks) if self.tasks else None,
            "episodes": self.episodes,
            "batch_size": self.batch_size,
            "sync": self.sync,
            "seed": self.seed,
            "policy": self.policy,
            "max_steps": self.max_steps,
            "obs": self.obs,
            "image_size": list(self.image_size),
            "render": self.render,
            "camera_map": dict(self.camera_map),
            "rename_map": dict(self.rename_map),
            "settle_steps": self.settle_steps,
            "gate": self.gate,
            "alpha": self.alpha,
            "shard": list(self.shard) if self.shard else None,
            "timeout": self.timeout,
            "episode_indices": list(self.episode_indices) if self.episode_indices else None,
            "video": self.video,
            "debug": self.debug,
            "device": self.device,
            "record": str(self.record) if self.record else None,
            "record_only": self.record_only,
            "resume": self.resume,
            "batched_inference": self.batched_inference,
        }


def default_obs(benchmark: Benchmark, policy: str) -> str:
    """The observation mode when none is asked for: LeRobot's layout for a LeRobot policy where
    the benchmark offers it, else the benchmark's own default."""
    try:
        lerobot = parse_spec(policy)[0] == "lerobot"
    except PolicySpecError:
        lerobot = False
    if lerobot and "lerobot" in benchmark.observation_modes:
        return "lerobot"
    return benchmark.observation_modes[0]
