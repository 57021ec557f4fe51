"""Which benchmarks and tasks a run covers, and the options that can only be checked once they
are known (observation modes, cameras, rendering, videos, recording)."""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, field
from functools import partial

from pytest_benchmarks.core import catalog, rendering
from pytest_benchmarks.core.settings import OPTION_SOURCE, Settings, default_obs
from pytest_benchmarks.core.tasks import EnvArgsError, SelectionError, TaskRef
from pytest_benchmarks.core.validation import OptionError


@dataclass
class Selection:
    """Which benchmarks and tasks a run covers, and why the others are left out."""

    #: Tasks to run per active benchmark.
    tasks: dict[str, list[TaskRef]]
    #: Benchmarks skipped because their extra is not installed -> reason.
    unavailable: dict[str, str] = field(default_factory=dict)
    #: Benchmarks left out by ``--benchmark-env``.
    excluded: list[str] = field(default_factory=list)


def select(options: Settings) -> Selection:
    """Resolve the benchmarks and tasks of a run and check the options that depend on them."""
    unavailable: dict[str, str] = {}
    active: list[str] = []
    # Before any benchmark lists its tasks: LeRobot's types build (and import) their simulators
    # to list them, and MuJoCo reads its backend once, at import.
    rendering.choose_backend()
    _bind_env_args(options)
    for name in options.envs or catalog.names():
        reason = catalog.problem(name)
        if reason and options.envs:
            raise OptionError(f"--benchmark-env: {reason}")
        if reason:
            unavailable[name] = reason
        else:
            active.append(name)
    try:
        tasks = catalog.resolve(active, options.tasks)
    except SelectionError as exc:
        raise OptionError(f"{exc.option}: {exc}") from None
    _check_each_named_has_tasks(options, tasks)
    if options.shard:
        tasks = shard_of(tasks, *options.shard)
    for name, chosen in tasks.items():
        modes = catalog.get(name).observation_modes
        if chosen and options.obs and options.obs not in modes:
            raise OptionError(
                f"--benchmark-obs: {name} offers {', '.join(modes)}, not {options.obs}"
            )
    for name, reason in _declared_problems(options, tasks).items():
        if options.envs:
            raise OptionError(f"--benchmark-env: {reason}")
        unavailable[name] = reason  # not asked for: the other benchmarks still run
        del tasks[name]
    _check_cameras(options, tasks)
    _check_rendering(options, tasks)
    _check_video(options, tasks)
    _check_record(options, tasks)
    excluded = [n for n in catalog.names() if options.envs and n not in options.envs]
    return Selection(tasks, unavailable, excluded)


def _check_each_named_has_tasks(options: Settings, tasks: dict[str, list[TaskRef]]) -> None:
    """A benchmark named by ``--benchmark-env`` that none of ``--benchmark-task`` selects from
    would run nothing, unsaid: refused, naming it and the tasks given."""
    if not options.envs or not options.tasks:
        return
    for name, chosen in tasks.items():
        if not chosen:
            groups = ", ".join(catalog.get(name).groups())
            raise OptionError(
                f"--benchmark-task: {name} (named by --benchmark-env) has none of the tasks "
                f"given ({', '.join(options.tasks)}); add one of its tasks or groups ({groups}), "
                "or leave it out of --benchmark-env"
            )


def _bind_env_args(options: Settings) -> None:
    """Hand ``--benchmark-env-arg`` to the benchmarks that take it; refused where none does."""
    takers = []
    for name in options.envs or ():
        with contextlib.suppress(SelectionError):  # an unloadable one is said by problem()
            benchmark = catalog.get(name)
            if benchmark.takes_env_args:
                benchmark.bind(options.env_args)
                takers.append(name)
    if options.env_args and not takers:
        raise OptionError(
            "--benchmark-env-arg: sets fields of LeRobot's env config, for lerobot:TYPE "
            f"benchmarks only; this run has {', '.join(options.envs or ()) or 'none named'}"
        )


def shard_of(
    selection: dict[str, list[TaskRef]], index: int, count: int
) -> dict[str, list[TaskRef]]:
    """Shard ``index`` of ``count``: every count-th task of the whole selection, sorted by id."""
    ordered = sorted((t for tasks in selection.values() for t in tasks), key=lambda t: t.id)
    keep = {t.id for t in ordered[index - 1 :: count]}
    return {name: [t for t in tasks if t.id in keep] for name, tasks in selection.items()}


def _check_cameras(options: Settings, selection: dict[str, list[TaskRef]]) -> None:
    """Every renamed camera must belong to a selected benchmark (a typo is not silently
    ignored), its new name must be usable as a file's and a feature's, and the run must render
    cameras at all."""
    known = {c for name, tasks in selection.items() if tasks for c in catalog.get(name).cameras}
    for source, target in options.camera_map:
        if source.removesuffix("_image") not in known:
            raise OptionError(
                f"--benchmark-camera-map: no camera {source!r} in the selected benchmarks; "
                f"valid: {', '.join(sorted(known)) or 'none'}"
            )
        bad = next((c for c in "/=," if c in target), None)
        if bad is not None:
            raise OptionError(
                f"--benchmark-camera-map: {source}={target}: a camera name cannot hold {bad!r} "
                "(it names files and features); use letters, digits, '_', '-' or '.'"
            )
    rendered = [
        name
        for name, tasks in selection.items()
        if tasks and (options.obs or default_obs(catalog.get(name), options.policy)) != "state"
    ]
    if options.camera_map and not rendered:
        raise OptionError(
            "--benchmark-camera-map: renames cameras, but the run's observations are state only "
            "(no camera is rendered); give --benchmark-obs=pixels (or lerobot), or leave the map "
            "out"
        )


def _check_video(options: Settings, selection: dict[str, list[TaskRef]]) -> None:
    """Videos need imageio's ffmpeg plugin, and LIBERO frames come from its camera images."""
    if options.video == "none" or not any(selection.values()):
        return
    if importlib.util.find_spec("imageio_ffmpeg") is None:
        raise OptionError(
            "--benchmark-video: imageio-ffmpeg is not installed: "
            "pip install 'pytest-benchmarks[video]'"
        )
    for name, tasks in selection.items():
        if tasks and catalog.get(name).video_from_cameras and options.obs == "state":
            raise OptionError(
                f"--benchmark-video: {name} videos need camera images, not --benchmark-obs=state"
            )
    _check_rendering(options, selection, force=True)


def _check_rendering(
    options: Settings, selection: dict[str, list[TaskRef]], force: bool = False
) -> None:
    """Pick MuJoCo's GL backend now, before anything imports mujoco; fail early if it is absent."""
    backend = rendering.choose_backend()
    renders = force or any(
        tasks and (options.obs or default_obs(catalog.get(name), options.policy)) != "state"
        for name, tasks in selection.items()
    )
    problem = rendering.missing(backend) if renders else None
    if problem:
        raise OptionError(problem)


def _check_record(options: Settings, selection: dict[str, list[TaskRef]]) -> None:
    """A dataset holds one benchmark's observation layout, and LeRobot writes it."""
    if options.record is None:
        if options.record_only != "all":
            raise OptionError("--benchmark-record-only: needs --benchmark-record DIR")
        return
    chosen = [name for name, tasks in selection.items() if tasks]
    if len(chosen) > 1:
        raise OptionError(
            f"--benchmark-record: one dataset holds one benchmark; {', '.join(chosen)} are "
            "selected (choose one with --benchmark-env)"
        )
    if importlib.util.find_spec("lerobot") is None:
        raise OptionError(
            "--benchmark-record: LeRobot writes the dataset and is not installed: "
            "pip install 'pytest-benchmarks[lerobot]'"
        )


def _declared_problems(options: Settings, tasks: dict[str, list[TaskRef]]) -> dict[str, str]:
    """Per benchmark, why what it declares for its selected tasks is unusable (a step limit
    below 1, spaces that cannot be declared), in one line naming it and its entry point, so
    that it is said before any test runs rather than as a traceback in the middle of the run."""
    problems: dict[str, str] = {}
    for name, chosen in tasks.items():
        benchmark = catalog.get(name)
        try:
            for task in chosen:
                if options.max_steps is None:
                    declared = partial(benchmark.default_max_steps, task)
                    steps = catalog.call(benchmark, f"default_max_steps({task.id})", declared)
                    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                        raise catalog.BenchmarkLoadError(
                            f"benchmark {name!r}: default_max_steps({task.id}) is {steps!r}, not "
                            "an integer >= 1 (--benchmark-max-steps overrides it)"
                        )
                spaces = partial(options.env_config, task)
                catalog.call(benchmark, f"spaces() for {task.id}", spaces)
        except catalog.BenchmarkLoadError as exc:
            if isinstance(exc.__cause__, EnvArgsError):  # the user's fields, not the plugin
                raise OptionError(f"{exc.__cause__.option}: {exc.__cause__}") from None
            renders = (options.obs or default_obs(benchmark, options.policy)) != "state"
            if isinstance(exc.__cause__, MemoryError) and renders:  # the images, not the plugin
                raise OptionError(_too_large(options, name, exc.__cause__)) from None
            problems[name] = str(exc)
    return problems


def _too_large(options: Settings, benchmark: str, exc: MemoryError) -> str:
    """The image size as the cause of a MemoryError while a benchmark declares its spaces
    (whose image boxes hold arrays of the image's shape), named with where it came from."""
    height, width = options.image_size
    source = (
        "" if options.image_size_from == OPTION_SOURCE else f" (from {options.image_size_from})"
    )
    return (
        f"--benchmark-image-size: {height}x{width}{source} is too large for this machine's "
        f"memory ({benchmark}'s spaces raised MemoryError: {exc}); give a smaller size, "
        "e.g. 224x224"
    )
