"""Evaluating a policy outside pytest, e.g. every N steps of a training loop.

``evaluate`` is a loop over the run engine the plugin's fixtures drive
(``engine.run.RunEngine``: the same settings, episode plan, resume, recording and
TaskResults) and writes the same metrics JSON, so numbers from a training run and from
``pytest --benchmark-policy=...`` agree episode for episode::

    from pytest_benchmarks.api import evaluate

    run = evaluate("metaworld", tasks=["push-v3"], policy="./checkpoints/step_2000", episodes=5)
    print(run.metrics["overall"]["pc_success"])
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_benchmarks.core import validation
from pytest_benchmarks.core.files import parts_dir
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.policy_spec import PolicySpec
from pytest_benchmarks.core.results import TaskResult, progress_text
from pytest_benchmarks.core.selection import select
from pytest_benchmarks.core.settings import (
    DEFAULT_EPISODES,
    DEFAULT_SEED,
    DEFAULT_SERVER_WAIT_MS,
    OPTIONS,
    Settings,
)
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.engine import lifecycle
from pytest_benchmarks.engine.dataset import DatasetSummary, build_dataset, none_succeeded
from pytest_benchmarks.engine.lifecycle import Run
from pytest_benchmarks.engine.metrics_file import MetricsFile
from pytest_benchmarks.engine.progress import Progress
from pytest_benchmarks.engine.run import RunEngine
from pytest_benchmarks.engine.vector import exit_if_reimporting_main
from pytest_benchmarks.policies import build_policy

if TYPE_CHECKING:
    from pytest_benchmarks.cluster.ray_pool import RayPool

#: A policy object, a spec (``--benchmark-policy`` syntax) or a factory (config, num_envs).
PolicyLike = Policy | str | Callable[[EnvConfig, int], Policy]

#: ``evaluate``'s keywords that set an option, and the setting each sets (the registry's
#: ``api`` names; a test holds the signature to them, defaults included).
API_KEYWORDS = {o.api: o.key for o in OPTIONS if o.api and o.api not in ("benchmarks", "policy")}


@dataclass
class Evaluation:
    """What one call produced: a TaskResult per task and the metrics document."""

    results: list[TaskResult] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    #: What ``record`` wrote, when it was given.
    dataset: DatasetSummary | None = None


def evaluate(
    benchmarks: str | Sequence[str],
    policy: PolicyLike = "scripted",
    tasks: Sequence[str] | None = None,
    episodes: int = DEFAULT_EPISODES,
    seed: int = DEFAULT_SEED,
    batch_size: int | None = None,
    sync: bool = False,
    max_steps: int | None = None,
    obs: str | None = None,
    image_size: int | str | tuple[int, int] | None = None,
    render: str = "faithful",
    camera_map: str | dict[str, str] | None = None,
    env_args: str | dict[str, str] | None = None,
    rename_map: str | dict[str, str] | None = None,
    device: str = "auto",
    metrics: str | Path | None = None,
    record: str | Path | None = None,
    record_only: str = "all",
    resume: bool = False,
    batched_inference: bool = False,
    settle_steps: int | None = None,
    episode_indices: Sequence[int] | str | None = None,
    shard: str | tuple[int, int] | None = None,
    timeout: float | None = None,
    video: str = "none",
    policy_server: str = "auto",
    policy_server_wait: float = DEFAULT_SERVER_WAIT_MS,
    progress: float | None = None,
    debug: bool = False,
    ray: str | None = None,
) -> Evaluation:
    """Run ``episodes`` episodes of every selected task with ``policy``.

    ``tasks`` takes what ``--benchmark-task`` takes (default: each benchmark's default
    selection). Every argument takes what its ``--benchmark-*`` option takes (or the typed
    value: a list of tasks, an ``(H, W)`` image size, a dict camera map), is checked the same
    way (``validation.OptionError``, one line naming the option) and defaults as it does.
    ``batch_size`` None: the plugin's ``auto`` (slots to suit the machine's cores), but 1 for a
    policy object, which must serve ``batch_size`` slots. The metrics JSON goes to ``metrics``
    when given (atomically, rewritten after every task). ``record`` names a new
    directory that receives every episode as a LeRobotDataset (``record_only="success"``: the
    successful ones), as ``--benchmark-record`` does; ``Evaluation.dataset`` is its summary
    (None, and no directory, where ``record_only="success"`` and no episode succeeded).
    ``resume`` carries on the run whose metrics JSON is at ``metrics``, as
    ``--benchmark-resume`` does: its finished tasks are kept, only the missing episodes run.
    ``batched_inference`` is ``--benchmark-batched-inference``; ``env_args`` is
    ``--benchmark-env-arg`` (``lerobot:TYPE`` benchmarks: LeRobot's ``--env.FIELD=VALUE``);
    ``episode_indices`` is ``--benchmark-episode`` (exactly these episodes, one env),
    ``shard`` ``--benchmark-shard`` (``"1/4"`` or ``(1, 4)``), ``timeout`` a task's limit in
    seconds (past it the task's row records TaskTimeout, which ``evaluate`` then raises),
    ``video`` ``none``, ``failures`` or ``all`` (MP4s beside the metrics JSON).
    ``policy_server="on"`` acts through a policy server process (a ``lerobot:`` spec; a served
    run is a batched one; ``auto`` is off in one process), which waits ``policy_server_wait``
    ms for requests to gather. ``progress``: seconds between progress lines on stderr
    (``metaworld/push-v3: 20/50 episodes, 18 successes, 31 s``; 0: after every episode);
    None (the default): none. ``debug`` is ``--benchmark-debug``: one env in this process and a
    per-step trace per task beside the metrics JSON (``traces/BENCHMARK/TASK.jsonl``).
    ``ray`` is ``--benchmark-ray``: each task a Ray task on the cluster at that address (or
    ``auto``), the policy built on its node from a spec.
    """
    exit_if_reimporting_main()  # a vector env's worker running an unguarded script again
    # The keywords by name, as the registry names them (this function's locals at entry).
    given = {API_KEYWORDS[name]: value for name, value in locals().items() if name in API_KEYWORDS}
    check_policy(policy, ray)
    settings = validation.build(
        root=Path.cwd(),
        **given,
        env=[benchmarks] if isinstance(benchmarks, str) else benchmarks,
        policy=policy if isinstance(policy, str) else PolicySpec.object(),
    )
    if batch_size is None and isinstance(policy, Policy):
        settings = replace(settings, batch_size=1)
    settings = resolved_here(settings, write=metrics is not None)
    lines = None if progress is None else ProgressLines(settings.progress_s)
    return run_locked(settings, policy, write=metrics is not None, progress=lines)


def resolved_here(settings: Settings, write: bool) -> Settings:
    """The settings of a run in this one process, with the refusals only a call can earn: a
    resume or a server wait that asks for nothing, outputs that cannot be written."""
    if settings.resume and not write:
        raise validation.OptionError("--benchmark-resume: needs metrics=PATH, the run to carry on")
    # One process, no workers to serve: the run block records the server as off.
    settings = lifecycle.resolved(settings, workers=0)
    unserved = lifecycle.unserved_wait(settings)
    if unserved is not None:  # in one process auto never serves: the call asks for nothing
        raise validation.OptionError(f"{unserved}; drop it, or give policy_server='on'")
    validation.check_record_path(settings.record, settings.resume)
    if write:
        validation.check_metrics_path(settings.metrics)
    return settings


def check_policy(policy: object, ray: str | None) -> None:
    """``policy`` is a spec, a Policy or a factory, and a spec where Ray's nodes build it."""
    if isinstance(policy, type):  # its methods make the class itself look like a Policy
        raise validation.OptionError(
            f"policy: {policy!r} is a class, not a Policy; pass an instance "
            f"({policy.__name__}(...)) or a factory (config, num_envs) -> Policy"
        )
    if not isinstance(policy, (str, Policy)) and not callable(policy):
        raise validation.OptionError(
            f"policy: {policy!r} is not a spec (a string such as 'scripted'), a Policy (an object "
            "with reset, act and identity) or a factory (config, num_envs) -> Policy"
        )
    if ray is not None and not isinstance(policy, str):
        raise validation.OptionError(
            "--benchmark-ray: each node builds the policy from its spec; give policy as a spec "
            "string (e.g. 'lerobot:DIR'), not an object or a factory"
        )


def run_locked(
    settings: Settings, policy: PolicyLike, write: bool, progress: ProgressLines | None = None
) -> Evaluation:
    """The run, opened and closed by ``engine.lifecycle.Run`` (as the plugin's session is): it
    holds its outputs (the metrics file when it ``write``s one, the record folder) meanwhile,
    and its policy server when it has one."""
    opened = Run.open(settings, select(settings).tasks, owner=True, metrics=write, journaling=write)
    complete = False
    try:
        endpoints = opened.serve()
        server = endpoints[0].text() if endpoints else None
        out = run(opened.engine, policy, write, progress, server)
        complete = write  # the file holds every row: the journal is no longer needed
        record = settings.record
        nothing = record is None or none_succeeded(
            parts_dir(record), settings.record_only, out.results
        )
        if record is not None and not nothing:
            out.dataset = build_dataset(parts_dir(record), record)
        return out
    finally:
        opened.close(complete)


class ProgressLines(Progress):
    """A running task's progress on stderr (the plugin's progress lines, without a worker's
    name)."""

    def emit(self, result: TaskResult, elapsed_s: float) -> None:
        line = progress_text(result.task.id, result.n_episodes, result.planned,
                             result.successes, elapsed_s)  # fmt: skip
        print(line, file=sys.stderr, flush=True)


def run(
    engine: RunEngine,
    policy: PolicyLike,
    write: bool,
    progress: ProgressLines | None = None,
    server: str | None = None,
) -> Evaluation:
    """Every task of the engine's run, in order, the metrics document rebuilt (and written,
    when ``write``) whenever a task ends, finished or interrupted; ``progress`` sees each
    finished episode; a spec's policy acts through the policy ``server`` when one is given."""
    settings = engine.settings
    metrics = MetricsFile(settings, list(sys.argv), Path.cwd(), write=write)
    out = Evaluation()

    def document(results: list[TaskResult], unfinished: bool) -> None:
        metrics.update(results, partial=unfinished, exitstatus=None if unfinished else 0)
        out.metrics = metrics.document or {}

    def keep(result: TaskResult) -> None:
        document([*out.results, result], unfinished=True)

    kept = engine.kept
    pool = None if settings.ray is None else ray_pool(engine)
    try:
        for task in engine.tasks():
            if task.id in kept:
                out.results.append(kept[task.id])
                continue
            if progress is not None:
                progress.start()
            if pool is not None:  # the cluster runs every task at once; their rows come in order
                out.results.append(pool.run_task(task, keep, progress=progress))
            else:
                out.results.append(run_here(engine, task, policy, keep, progress, server))
    finally:
        if pool is not None:
            pool.close()
    document(out.results, unfinished=False)
    return out


def run_here(
    engine: RunEngine,
    task: TaskRef,
    policy: PolicyLike,
    keep: Callable[[TaskResult], None],
    progress: ProgressLines | None,
    server: str | None,
) -> TaskResult:
    """One task in this process."""
    env = engine.env(task)
    processors = env.benchmark.processors(env.config)
    loading = replace(engine.settings.loading, server=server)
    make = partial(build_policy, policy, env.benchmark, env.config, env.num_envs,
                   loading, processors.features)  # fmt: skip
    try:
        return engine.run_task(env, make, processors, keep, progress=progress)
    finally:
        env.close()


def ray_pool(engine: RunEngine) -> RayPool:
    """The run's tasks handed to the Ray cluster its settings name, all at once."""
    from pytest_benchmarks.cluster.ray_pool import RayPool  # only a Ray run's

    show = partial(print, file=sys.stderr)
    envs = [name for name, tasks in engine.selection.items() if tasks]
    pool = RayPool.open(engine.settings, engine.journal, show, envs)
    for task in engine.tasks():
        if task.id not in engine.kept:
            pool.submit(task, engine.resumed.get(task.id))
    return pool
