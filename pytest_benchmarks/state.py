"""Per-session plugin state, kept in ``config.stash``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_benchmarks import registry, rendering, settings
from pytest_benchmarks.policies import expert_based
from pytest_benchmarks.registry import EnvConfig, SelectionError, TaskRef
from pytest_benchmarks.report import check_writable
from pytest_benchmarks.results import TaskResult
from pytest_benchmarks.settings import Settings
from pytest_benchmarks.stats import Comparison
from pytest_benchmarks.vector import auto_batch_size


@dataclass
class SessionState:
    """What the plugin knows about this session, in a worker or the controller."""

    settings: Settings
    #: Tasks to run per active benchmark.
    selection: dict[str, list[TaskRef]]
    #: Benchmarks skipped because their extra is not installed -> reason.
    unavailable: dict[str, str]
    #: Benchmarks left out by ``--benchmark-env``.
    excluded: list[str]
    #: True in an xdist worker: it runs tasks but writes no metrics file.
    is_worker: bool
    #: xdist workers in the session (0 without xdist).
    workers: int
    #: Results computed in this process, by task id: later tests of a task read them.
    cache: dict[str, TaskResult] = field(default_factory=dict)
    #: Results gathered from test reports (the controller's view), by task id.
    results: dict[str, TaskResult] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    deselected: int = 0
    #: Bonferroni's m per test function: its selected tasks that have a snapshot.
    gate_counts: dict[str, int] = field(default_factory=dict)

    def task_ids(self) -> set[str]:
        return {t.id for tasks in self.selection.values() for t in tasks}

    def env_config(self, task: TaskRef) -> EnvConfig:
        return env_config(self.settings, task)

    @property
    def single_env(self) -> bool:
        """One env in the test process: ``--benchmark-debug`` or ``--benchmark-episode``."""
        return self.settings.debug or self.settings.episode_indices is not None

    def batch_size(self, episodes: int) -> int:
        if self.single_env:
            return 1
        if self.settings.batch_size:
            return min(self.settings.batch_size, episodes)
        return auto_batch_size(episodes, max(1, self.workers))


def env_config(s: Settings, task: TaskRef) -> EnvConfig:
    """What a task's env needs from the run's settings (the plugin's and the API's)."""
    benchmark = registry.get(task.env)
    return EnvConfig(
        task=task,
        max_steps=s.max_steps or benchmark.default_max_steps(task),
        seed=s.seed,
        obs=s.obs or benchmark.observation_modes[0],
        image_size=s.image_size,
        settle_steps=s.settle_steps,
        camera_map=s.camera_map,
        video=s.video,
        video_dir=str(s.metrics.parent / "videos"),
        privileged=expert_based(s.policy),
    )


def build_state(config: pytest.Config) -> SessionState:
    """Validate the options and work out which benchmarks and tasks this session runs.

    Raises pytest.UsageError with one line for anything invalid, before collection.
    """
    is_worker = hasattr(config, "workerinput")
    is_controller = not is_worker and not config.option.collectonly

    def check_metrics(path: Path) -> None:
        if not is_controller:
            return
        try:
            check_writable(path)
        except OSError as exc:
            raise pytest.UsageError(f"--benchmark-metrics: cannot write {path}: {exc}") from None

    options = settings.load(config, check_metrics)
    unavailable: dict[str, str] = {}
    active: list[str] = []
    for name in options.envs or registry.names():
        reason = registry.get(name).missing()
        if reason and options.envs:
            raise pytest.UsageError(f"--benchmark-env: {reason}")
        if reason:
            unavailable[name] = reason
        else:
            active.append(name)
    try:
        selection = registry.resolve(active, options.tasks)
    except SelectionError as exc:
        raise pytest.UsageError(f"--benchmark-task: {exc}") from None
    if options.shard:
        selection = _shard(selection, *options.shard)
    for name, tasks in selection.items():
        modes = registry.get(name).observation_modes
        if tasks and options.obs and options.obs not in modes:
            raise pytest.UsageError(
                f"--benchmark-obs: {name} offers {', '.join(modes)}, not {options.obs}"
            )
    _check_cameras(options, selection)
    _check_rendering(options, selection)
    _check_video(options, selection)
    workers = (
        int(config.workerinput["workercount"])  # type: ignore[attr-defined]
        if is_worker
        else int(getattr(config.option, "numprocesses", 0) or 0)
    )
    return SessionState(
        settings=options,
        selection=selection,
        unavailable=unavailable,
        excluded=[n for n in registry.names() if options.envs and n not in options.envs],
        is_worker=is_worker,
        workers=workers,
    )


def _shard(selection: dict[str, list[TaskRef]], index: int, count: int) -> dict[str, list[TaskRef]]:
    """Shard ``index`` of ``count``: every count-th task of the whole selection, sorted by id."""
    ordered = sorted((t for tasks in selection.values() for t in tasks), key=lambda t: t.id)
    keep = {t.id for t in ordered[index - 1 :: count]}
    return {name: [t for t in tasks if t.id in keep] for name, tasks in selection.items()}


def _check_cameras(options: Settings, selection: dict[str, list[TaskRef]]) -> None:
    """Every renamed camera must belong to a selected benchmark: a typo is not silently ignored."""
    known = {c for name, tasks in selection.items() if tasks for c in registry.get(name).cameras}
    for source, _ in options.camera_map:
        if source.removesuffix("_image") not in known:
            raise pytest.UsageError(
                f"--benchmark-camera-map: no camera {source!r} in the selected benchmarks; "
                f"valid: {', '.join(sorted(known)) or 'none'}"
            )


def _check_video(options: Settings, selection: dict[str, list[TaskRef]]) -> None:
    """Videos need imageio's ffmpeg plugin, and LIBERO frames come from its camera images."""
    if options.video == "none" or not any(selection.values()):
        return
    import importlib.util

    if importlib.util.find_spec("imageio_ffmpeg") is None:
        raise pytest.UsageError(
            "--benchmark-video: imageio-ffmpeg is not installed: "
            "pip install 'pytest-benchmarks[video]'"
        )
    if selection.get("libero") and (options.obs or "pixels") != "pixels":
        raise pytest.UsageError("--benchmark-video: LIBERO videos need --benchmark-obs=pixels")
    _check_rendering(options, selection, force=True)


def _check_rendering(
    options: Settings, selection: dict[str, list[TaskRef]], force: bool = False
) -> None:
    """Pick MuJoCo's GL backend now, before anything imports mujoco; fail early if it is absent."""
    backend = rendering.choose_backend()
    renders = force or any(
        tasks and (options.obs or registry.get(name).observation_modes[0]) == "pixels"
        for name, tasks in selection.items()
    )
    problem = rendering.missing(backend) if renders else None
    if problem:
        raise pytest.UsageError(problem)


STATE = pytest.StashKey[SessionState]()
#: A result computed by a test, waiting to ride on its report to the controller (item stash).
PENDING = pytest.StashKey[TaskResult]()
#: The snapshot gate's verdict on the task a test compared, for its report.
GATE = pytest.StashKey[Comparison]()


def get_state(config: pytest.Config) -> SessionState:
    return config.stash[STATE]
