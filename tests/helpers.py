"""Helpers the plugin's tests import: the toy project's files and readers of metrics."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
ROOT = TESTS.parent
#: The front page and every page of the manual: the commands and examples the tests run.
DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def docs_text() -> str:
    """README.md and the manual's pages, one after another."""
    return "\n\n".join(page.read_text() for page in DOC_PAGES)


#: What an xdist worker exports to its children; pytest-benchmark reads it as "xdist is on",
#: so a session a test starts under xdist drops them to time anything.
#: ``--benchmark-timeout`` for runs where hung tasks sit beside healthy ones: a hung task costs
#: this long, and a healthy toy task (an env's worker processes started on a loaded two-core
#: machine under nested xdist) must never meet it.
HANG_TIMEOUT = 8

XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")

#: conftest for pytester sessions that also registers the toy benchmark.
TOY_CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import toybench  # noqa: F401  (registers "toy" and "absent")
"""

TOY_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("toy")

def test_rollout(evaluate):
    result = evaluate()
    assert result.error is None and result.n_episodes == result.planned

def test_success_rate(evaluate):
    assert evaluate().successes > 0
"""


def read_metrics(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def outcomes(document: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Per task id, the episodes without timing: equal for equal deterministic runs."""
    return {
        row["id"]: [
            tuple(
                tuple(v) if isinstance(v, list) else v  # the initial state's sketch
                for k, v in sorted(e.items())
                if k not in ("duration_s", "video", "video_error")
            )
            for e in row["episodes"]
        ]
        for row in document["results"]
    }


#: LIBERO episodes on which two ways of running the same env are compared step for step:
#: (task, whether the expert acts (else random actions), steps per episode).
LIBERO_SIDE_BY_SIDE = [
    # The expert grasps, carries and places a bowl: contacts, a moving object.
    ("libero_spatial/0", True, 300),
    # A stove and a cabinet with a drawer (articulated fixtures), pushed about at random.
    ("libero_goal/2", False, 80),
]


def sim_state(env: Any) -> Any:
    """A LIBERO env's simulator state, all that MuJoCo integrates and warm-starts from (time,
    positions, velocities, activations, controls, the solver's warm start, applied forces),
    with the sensors, accelerations and constraint forces last computed."""
    import mujoco
    import numpy as np

    sim = env._env.env.sim
    model, data = sim.model._model, sim.data._data
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    return np.concatenate([state, data.sensordata, data.qacc, data.efc_force])


def step_side_by_side(
    a: Any, b: Any, expert: bool, steps: int, at_reset: Callable[[Any, Any], None] | None = None
) -> int:
    """Two episodes (seed 1000 from initial state 0, 1001 from 7) of LIBERO envs ``a`` and ``b``
    side by side, ``a``'s expert acting (else seeded random actions): the simulator states are
    equal after every reset and step, and so are the success flags and the last observations;
    ``at_reset(a, b)`` checks more after each reset. Returns the episodes that succeeded."""
    import numpy as np

    from pytest_benchmarks.core.expert_action import EXPERT_KEY

    rng = np.random.default_rng(0)
    successes = 0
    for episode, (seed, init) in enumerate([(1000, 0), (1001, 7)]):
        obs_a, _ = a.reset(seed=seed, options={"init_state": init})
        obs_b, _ = b.reset(seed=seed, options={"init_state": init})
        if at_reset is not None:
            at_reset(a, b)
        assert np.array_equal(sim_state(a), sim_state(b)), (episode, "reset")
        for step in range(steps):
            action = obs_a[EXPERT_KEY] if expert else rng.uniform(-1, 1, 7)
            obs_a, _, _, _, info_a = a.step(action)
            obs_b, _, _, _, info_b = b.step(action)
            assert np.array_equal(sim_state(a), sim_state(b)), (episode, step)
            assert info_a == info_b
            if info_a["success"]:
                successes += 1
                break
        for key in obs_a:
            assert np.array_equal(obs_a[key], obs_b[key]), (episode, key)
    return successes


def seeded_actions(dim: int, steps: int) -> list[Any]:
    """An episode's random actions, the same arrays whichever env steps them (rng 0, one
    float32 draw of ``dim`` per step)."""
    import numpy as np

    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, dim).astype(np.float32) for _ in range(steps)]


#: Two short episodes with two settle steps: enough for a second reset that keeps its context.
SHORT = {"episodes": 2, "steps": 3, "settle_steps": 2}


def pixel_episodes(
    benchmark: str,
    task: str,
    render: str,
    size: tuple[int, int],
    episodes: int = 1,
    steps: int = 4,
    settle_steps: int | None = None,
    check: Callable[[Any], None] = lambda env: None,
) -> list[dict[str, Any]]:
    """Every observation of ``episodes`` episodes of one pixel env (initial state k for episode
    k; a LIBERO env's later resets keep its render context): each a reset and ``steps`` seeded
    random actions, the same arrays whichever env steps them. ``check`` sees the env before it
    closes."""
    from pytest_benchmarks.core import catalog
    from pytest_benchmarks.core.tasks import EnvConfig

    bench = catalog.get(benchmark)
    config = EnvConfig(
        bench.select([task])[0], 500, 1000, obs="pixels", image_size=size, render=render,
        settle_steps=settle_steps,
    )  # fmt: skip
    env = bench.make_env(config)
    actions = seeded_actions(env.action_space.shape[0], steps)
    seen = []
    try:
        for episode in range(episodes):
            seen.append(env.reset(seed=0, options={"init_state": episode})[0])
            seen += [env.step(action)[0] for action in actions]
        check(env)
    finally:
        env.close()
    return seen


def leftover_processes(marker: str, wait_s: float = 10.0) -> list[str]:
    """Live processes whose command line or environment mentions ``marker`` (the test's
    directory, in ``TOY_RUN`` of every process a toy session starts, orphans included), after
    giving the ones on their way out up to ``wait_s`` to go."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                environ = (entry / "environ").read_bytes().decode(errors="replace")
                state = (entry / "stat").read_text().split(") ", 1)[1][0]
            except OSError:
                continue
            if (marker in cmdline or marker in environ) and state != "Z":
                found.append(f"{entry.name}: {cmdline[:200]}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def fill_up(path: Path) -> None:
    """Write zeros to ``path`` until its filesystem is full."""
    with contextlib.suppress(OSError), open(path, "wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()


def offline_hub(monkeypatch: pytest.MonkeyPatch, cache: Path | None = None) -> None:
    """This process, and the processes it starts, as under ``HF_HUB_OFFLINE=1`` (and
    ``HF_HUB_CACHE=<cache>`` when given): huggingface_hub read those variables when it was
    imported, so its constants are set too, and an in-process session reads the cache as a new
    process would."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    if cache is not None:
        monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))


def hub_cache(root: Path, repo: str, folder: Path, commit: str) -> None:
    """``folder`` as ``repo`` at ``commit`` in huggingface_hub's cache layout under ``root``,
    as a download would have left it."""
    org, name = repo.split("/")
    base = root / f"models--{org}--{name}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(commit)
    shutil.copytree(folder, base / "snapshots" / commit)


@contextlib.contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at ``mount`` (created) with ``options``, unmounted after; the test
    is skipped where mounting is not allowed."""
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"{options},size=1m", "tmpfs", str(mount)],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def runs_workers(args: tuple[str, ...]) -> bool:
    """Whether pytest ``args`` start xdist workers (``-n N`` with N other than 0)."""
    for number, arg in enumerate(args):
        value = None
        if arg in ("-n", "--numprocesses") and number + 1 < len(args):
            value = args[number + 1]
        elif arg.startswith("--numprocesses="):
            value = arg.partition("=")[2]
        elif arg.startswith("-n") and len(arg) > 2:
            value = arg[2:]
        if value is not None and value != "0":
            return True
    return False


def run(project: pytest.Pytester, *args: str, timeout: float | None = None) -> pytest.RunResult:
    """A pytest session of ``project`` (the cache plugin off): in this process, unless it starts
    xdist workers, whose subject is processes and which start their own."""
    full = ("-p", "no:cacheprovider", *args)
    if runs_workers(full):
        return project.runpytest_subprocess(*full, timeout=timeout)
    return project.runpytest(*full, no_reraise_ctrlc=True)


def run_in_subprocess(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``run`` in a process of its own, for a test whose subject is the session's processes
    (which process builds what, what a dataset build prints at the process's end)."""
    return project.runpytest_subprocess("-p", "no:cacheprovider", *args)
