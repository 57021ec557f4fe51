"""pytest hooks: options, the marker, parametrization per task, results, metrics and summary.

The hooks stay thin; the work is done by plain functions in the other modules.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Sequence
from typing import Any

import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.files import check_writable
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.engine.output_lock import OutputBusy, OutputLock
from pytest_benchmarks.metrics.snapshots import DIRNAME
from pytest_benchmarks.plugin import (
    assertion,
    events,
    options,
    signals,
    starting,
    timing_options,
    untimed,
)
from pytest_benchmarks.plugin.controller import Controller
from pytest_benchmarks.plugin.leftovers import Leftovers
from pytest_benchmarks.plugin.nodeids import task_of_nodeid
from pytest_benchmarks.plugin.session import (
    STATE,
    SessionState,
    build_state,
    get_state,
)
from pytest_benchmarks.plugin.worker import Worker

MARKER = "benchmark_env"

RESTORE_SIGNALS = pytest.StashKey[Callable[[], None]]()
RESTORE_WARNINGS = pytest.StashKey[Callable[[], None]]()
LEFTOVERS = pytest.StashKey[Leftovers]()
#: This process's part: ``session`` (no xdist), xdist's ``controller`` or a ``worker``.
ROLE = pytest.StashKey[str]()


class _Excluded:
    """Parameter of a test whose benchmark ``--benchmark-env`` left out; deselected."""

    def __init__(self, env: str) -> None:
        self.env = env


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*names): run this test once per task of the named benchmarks "
        "(parametrizes the benchmark_task fixture)",
    )
    state = config.stash[STATE] = build_state(config)
    if state.is_worker:
        config.pluginmanager.register(Worker(state), "benchmarks-worker")
    else:
        config.pluginmanager.register(Controller(config, state), "benchmarks-controller")
        if state.settings.ray is not None and not config.option.collectonly:
            from pytest_benchmarks.plugin.ray_driver import RayDriver  # only a Ray session's

            config.pluginmanager.register(RayDriver.join(config, state), "benchmarks-ray")
    xdist_controller = not state.is_worker and bool(getattr(config.option, "numprocesses", None))
    role = "worker" if state.is_worker else "controller" if xdist_controller else "session"
    config.stash[ROLE] = role
    starting.release()  # the session's own handlers from here
    config.stash[RESTORE_SIGNALS] = signals.install(role)
    if role == "controller":
        starting.hold()  # its workers start with SIGINT blocked, until their sessions start
    if role != "controller":  # this process runs the tasks, and the policies
        leftovers = config.stash[LEFTOVERS] = Leftovers()
        leftovers.register_exit()
    config.stash[RESTORE_WARNINGS] = untimed.silence(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """pytest-benchmark's file options checked before anything runs (its saved runs were
    loaded at configure)."""
    if session.config.stash.get(ROLE, None) != "worker":
        timing_options.check(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """SIGINT unblocked once the session has started (an xdist controller: its workers
    started; a worker: its handlers in place): a Ctrl-C that came meanwhile is taken here,
    where pytest ends a session as interrupted and xdist stops its workers (from inside
    ``pytest_sessionstart`` neither would). A wrapper: it runs whatever the hook returns."""
    if session.config.stash.get(ROLE, None) in ("controller", "worker"):
        starting.let_go()
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """xdist's ``--looponfail`` process never configures a session: SIGINT is its own."""
    if config.getoption("looponfail", False):
        starting.release()


def pytest_unconfigure(config: pytest.Config) -> None:
    # A session that ended before collecting (a usage error, say): a held Ctrl-C is spent.
    starting.drop(inherited=config.stash.get(ROLE, None) == "worker")
    state = config.stash.get(STATE, None)
    if state is not None:
        state.run.release()
    config.stash.get(RESTORE_SIGNALS, lambda: None)()
    config.stash.get(RESTORE_WARNINGS, lambda: None)()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    state = get_state(metafunc.config)
    params = []
    for name in _marked(metafunc, marker.args, state):
        if name in state.excluded or name not in {*state.selection, *state.unavailable}:
            params.append(pytest.param(_Excluded(name), id=name))
        elif name in state.unavailable:
            params.append(
                pytest.param(None, id=name, marks=pytest.mark.skip(reason=state.unavailable[name]))
            )
        else:
            params.extend(_task_param(state, task) for task in state.selection[name])
            if not state.selection[name]:
                params.append(pytest.param(_Excluded(name), id=name))
    metafunc.parametrize("benchmark_task", params, indirect=True)


def _marked(metafunc: pytest.Metafunc, names: Sequence[str], state: SessionState) -> list[str]:
    """The benchmarks a marker names; a family's name (``lerobot``) names each of its members
    the run selected (``--benchmark-env=lerobot:pusht``)."""
    found = []
    for name in names:
        if name in catalog.families():
            members = [
                n for n in (*state.selection, *state.unavailable) if n.startswith(f"{name}:")
            ]
            found.extend(members or [name])
        elif catalog.exists(name):
            found.append(name)
        else:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: @{MARKER}({name!r}) names no benchmark; "
                f"valid: {catalog.valid_names()}, or a family: {', '.join(catalog.families())}"
            )
    return found


def _task_param(state: SessionState, task: TaskRef) -> Any:
    """A task's parameter; skipped when the policy needs a scripted expert the task lacks."""
    reason = None
    if state.settings.policy.expert_based:
        reason = catalog.get(task.env).scripted_missing(task)
    marks = [pytest.mark.skip(reason=f"{task.id}: {reason}")] if reason else []
    return pytest.param(task, id=task.id, marks=marks)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    state = get_state(config)
    for item in items:
        callspec = getattr(item, "callspec", None)
        param = callspec.params.get("benchmark_task") if callspec else None
        if isinstance(param, _Excluded):
            drop.append(item)
            state.deselected[param.env] = state.deselected.get(param.env, 0) + 1
        else:
            keep.append(item)
        state.collected += isinstance(param, TaskRef)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    if getattr(config.option, "update_snapshots", False) and not state.is_worker:
        check_snapshot_dirs(config, [item.nodeid for item in keep])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """The controller's look at what a worker collected (it collects nothing itself)."""
    if getattr(node.config.option, "update_snapshots", False):
        check_snapshot_dirs(node.config, ids)


def check_snapshot_dirs(config: pytest.Config, nodeids: list[str]) -> None:
    """With ``--snapshot-update``, the snapshot directory of every test file that runs a task
    must be writable before any episode runs (a long run must not end with its new baseline
    unwritable), and this session's alone (locked). Ends the session (exit status 4) with one
    line."""
    tasks = get_state(config).task_ids()
    files = {nodeid.split("::")[0] for nodeid in nodeids if task_of_nodeid(nodeid, tasks)}
    for file in sorted(files):
        path = config.rootpath / file
        folder = path.parent / DIRNAME / path.stem
        try:
            check_writable(folder / "probe.json")
        except OSError as exc:
            pytest.exit(
                f"--snapshot-update: cannot write snapshots in {folder}: {exc}",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )
        locks = get_state(config).locks
        if any(lock.target == folder for lock in locks):
            continue  # another xdist worker's collection named it too
        lock = OutputLock(folder, "--snapshot-update", beside=False)
        try:
            lock.acquire()
        except OutputBusy as exc:
            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        if lock.error is not None:  # the report header, where the others' are, is printed
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(lock.error, yellow=True)
        locks.append(lock)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """End what the policies left running (``leftovers``), each in one line."""
    leftovers = session.config.stash.get(LEFTOVERS, None)
    if leftovers is None:
        return
    leftovers.status = int(session.exitstatus)
    lines = leftovers.end_children()
    state = get_state(session.config)
    if state.is_worker:
        for line in lines:
            os.write(2, f"{line}\n".encode())  # past any output capture
    else:
        state.leftover_lines += lines


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        result = yield
    except BaseException as exc:
        assertion.verdict(item, exc)
        raise
    assertion.verdict(item, None)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    events.attach_test_events(report, item)  # carried to the controller (xdist serialises it)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """Reports that only carry events are no test outcome: no letter, no word, not counted."""
    if getattr(report, "when", None) == events.EVENT:
        return ("", "", "")
    return None


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(STATE, None)
    if state is None or state.is_worker:
        return []
    s = state.settings
    parts = [f"{name}: {len(tasks)} tasks" for name, tasks in state.selection.items()]
    lines = [
        f"benchmarks: {', '.join(parts) or 'none'}; episodes {s.episodes}, seed {s.seed}, "
        f"policy {s.policy}, batch size {s.batch_size or 'auto'}"
        f"{', sync' if s.sync else ''}"
    ]
    if s.image_size_declared:
        height, width = s.image_size
        lines.append(
            f"image size {height}x{width} from {s.image_size_from}; "
            "--benchmark-image-size overrides it"
        )
    lines += [f"benchmarks skipped: {reason}" for reason in state.unavailable.values()]
    speed = untimed.header_line(config)
    if speed is not None:
        lines.append(speed)
    if state.journal_line:
        lines.append(state.journal_line)
    lines += [lock.error for lock in state.locks if lock.error]
    if s.resume:
        lines.append(resume_line(state))
    lines += state.engine.notes
    return lines


def resume_line(state: SessionState) -> str:
    """What --benchmark-resume keeps and what it still runs."""
    engine = state.engine
    if not engine.resumed:
        return f"resume: no earlier results at {state.settings.metrics}; every task runs"
    kept = engine.kept
    runs = [task for task in engine.tasks() if task.id not in kept]
    episodes = sum(len(engine.missing(task)) for task in runs)
    return (
        f"resume: {len(kept)} finished tasks kept from {state.settings.metrics}; "
        f"{len(runs)} tasks run {episodes} episodes"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Keep each task's tests on one worker under xdist's default ``--dist load``."""
    if config.getoption("dist", "load") != "load":
        return None
    from pytest_benchmarks.plugin.scheduling import TaskScheduling

    return TaskScheduling(config, log, get_state(config).task_ids())
