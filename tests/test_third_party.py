"""A benchmark from another package, added as a third party adds one: a small package of its
own, installed by pip into a folder of the test's, whose ``pytest_benchmarks.benchmarks`` entry
point names its Benchmark. Nothing of this repository is edited or imported by the package
beyond the public contract; the plugin, xdist workers, the snapshot gate, the API and the CLI
find it through its metadata alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import outcomes, read_metrics

#: A pip install into a folder, then sessions of it: the end-to-end tier.
pytestmark = pytest.mark.e2e

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "lanebench"
version = "0.1.0"

[project.entry-points."pytest_benchmarks.benchmarks"]
lane = "lanebench:Lane"
broken = "lanebench.missing:Nope"
notabench = "lanebench:Cart"
exiting = "lanebench.exits:Lane"
notasks = "lanebench:NoTasks"
nospaces = "lanebench:NoSpaces"
negative = "lanebench:NegativeSteps"
# A second package's claim on a name another one registers.
pusht = "lanebench:Lane"
"""

#: A module that ends the process when it is imported.
EXITS = "import sys\nsys.exit(3)\n"

#: A lane the cart drives along: ``x`` starts at ``-0.125 * init_state`` and the episode succeeds
#: at ``x >= goal``; the scripted driver pushes at full speed, so ``far`` needs more steps.
PACKAGE = '''
"""A third-party benchmark: a cart driven along a lane."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks import Benchmark, TaskRef
from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.processors import EnvProcessors, state_vector

GOALS = {"near": 0.6, "far": 1.6}
#: Steps and offsets exact in binary, so no episode ends on a rounding.
SPEED, OFFSET = 0.25, 0.125


class Cart(gym.Env):
    def __init__(self, goal: float) -> None:
        self.goal = goal
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.x = 0.0

    def reset(self, *, seed=None, options=None):
        self.x = -OFFSET * int((options or {}).get("init_state", 0))
        return np.array([self.x, self.goal]), {}

    def step(self, action):
        self.x += SPEED * float(action[0])
        return np.array([self.x, self.goal]), -abs(self.goal - self.x), False, False, {
            "success": self.x >= self.goal
        }


class Driver:
    def reset(self, slots, seeds):
        pass

    def act(self, batch):
        return np.ones((len(batch["observation.state"]), 1), np.float32)

    def identity(self):
        return {"source": "scripted", "id": "lanebench.driver", "revision": None}


class Lane(Benchmark):
    extra = "lane"
    requires = ("gymnasium",)

    def tasks(self):
        return [TaskRef(self.name, self.name, name, i, f"Drive {name}.")
                for i, name in enumerate(GOALS)]

    def groups(self):
        return {"lanes": list(GOALS)}

    def default_max_steps(self, task):
        return 12

    def init_state(self, task, episode):
        return episode % 3

    def spaces(self, config):
        return (gym.spaces.Box(-np.inf, np.inf, (2,), np.float64),
                gym.spaces.Box(-1.0, 1.0, (1,), np.float32))

    def make_env(self, config):
        return Cart(GOALS[config.task.task])

    def features(self, config):
        return {"observation.state": Feature((2,), "float32")}

    def processors(self, config):
        return EnvProcessors(self.features(config), config.task.description, [state_vector()])

    def scripted_policy(self, task, num_envs):
        return Driver()


class NoTasks(Lane):
    def tasks(self):
        raise RuntimeError("the task list is not there")


class NoSpaces(Lane):
    def spaces(self, config):
        raise RuntimeError("no spaces declared")


class NegativeSteps(Lane):
    def default_max_steps(self, task):
        return -5
'''

TESTS = """
import pytest

pytestmark = pytest.mark.benchmark_env("lane")

def test_gate(evaluate, snapshot):
    assert evaluate() == snapshot

def test_reaches(evaluate):
    assert evaluate().successes > 0
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package installed by pip into a folder of its own (``pip install --target``)."""
    root = tmp_path_factory.mktemp("lanebench")
    source = root / "src"
    (source / "lanebench").mkdir(parents=True)
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "lanebench" / "__init__.py").write_text(PACKAGE)
    (source / "lanebench" / "exits.py").write_text(EXITS)
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    assert any(target.glob("lanebench-0.1.0.dist-info/entry_points.txt"))
    return target


@pytest.fixture
def lane_project(pytester: pytest.Pytester, site: Path, monkeypatch: pytest.MonkeyPatch):
    """A project whose sessions (and their xdist and env workers) see the installed package."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    pytester.makepyfile(test_lane=TESTS)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-env=lane", "--benchmark-episodes=6", *args
    )


def test_an_installed_benchmark_runs_with_the_options_the_gate_and_the_cli(
    lane_project: pytest.Pytester,
):
    path = lane_project.path
    stored = run(lane_project, "--snapshot-update", "-n", "2", "--benchmark-batch-size=2",
                 f"--benchmark-metrics={path / 'base.json'}")  # fmt: skip
    stored.assert_outcomes(passed=4)
    snap = path / "__benchmark_snapshots__" / "test_lane" / "test_gate" / "lane"
    far = json.loads((snap / "far.json").read_text())
    # From init_state 0, 1, 2 (x = 0, -0.125, -0.25): 7, 7 and 8 steps of 0.25 to reach 1.6.
    assert far["id"] == "lane/far" and [e["steps"] for e in far["episodes"]] == [7, 7, 8] * 2
    base = read_metrics(path / "base.json")
    assert [r["id"] for r in base["results"]] == ["lane/far", "lane/near"]
    assert base["overall"]["successes"] == 12

    # The gate holds a rerun, fails a collapsed policy and refuses another step limit (the
    # snapshot's is the benchmark's own).
    again = run(lane_project, "--benchmark-sync", f"--benchmark-metrics={path / 'again.json'}")
    again.assert_outcomes(passed=4)
    again.stdout.fnmatch_lines(["snapshot gate: 2 tasks compared (stat*): 0 regressed*"])
    assert outcomes(read_metrics(path / "again.json")) == outcomes(base)
    collapsed = run(lane_project, "--benchmark-policy=noop", "--benchmark-task=far",
                    f"--benchmark-metrics={path / 'collapsed.json'}")  # fmt: skip
    collapsed.assert_outcomes(failed=2)
    collapsed.stdout.fnmatch_lines(["*REGRESSION lane/far*"])
    short = run(lane_project, "--benchmark-max-steps=6", "--benchmark-task=far",
                f"--benchmark-metrics={path / 'short.json'}")  # fmt: skip
    short.assert_outcomes(failed=2)
    short.stdout.fnmatch_lines(["*lane/far: snapshot *far.json: the snapshot and this run are "
                                "different experiments (max_steps 12 → 6): *"])  # fmt: skip

    # Shards merged by the CLI equal the whole run, and compare judges them.
    for shard in ("1/2", "2/2"):
        run(lane_project, f"--benchmark-shard={shard}",
            f"--benchmark-metrics={path / ('s' + shard[0] + '.json')}").assert_outcomes(passed=2)  # fmt: skip
    cli = [sys.executable, "-m", "pytest_benchmarks.cli"]
    merged = subprocess.run([*cli, "merge", str(path / "s1.json"), str(path / "s2.json"), "-o",
                             str(path / "merged.json")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    assert outcomes(read_metrics(path / "merged.json")) == outcomes(base)
    noop = run(lane_project, "--benchmark-policy=noop", f"--benchmark-metrics={path / 'noop.json'}")
    noop.assert_outcomes(failed=4)
    compared = subprocess.run([*cli, "compare", str(path / "base.json"), str(path / "noop.json")],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    assert compared.returncode == 1 and "lane/far: 6/6" in compared.stdout, compared.stdout


def test_the_api_evaluates_an_installed_benchmark(site: Path, tmp_path: Path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        from pytest_benchmarks.api import evaluate
        run = evaluate("lane", tasks=["near"], episodes=3, metrics={str(tmp_path / "m.json")!r})
        print([(r.task.id, r.successes) for r in run.results])
    """)  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('lane/near', 3)]"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("broken", "*--benchmark-env: benchmark 'broken' (pytest_benchmarks.benchmarks entry "
                   "point 'lanebench.missing:Nope') cannot be loaded: ModuleNotFoundError: *"),
        ("notabench", "*--benchmark-env: benchmark 'notabench': pytest_benchmarks.benchmarks "
                      "entry point 'lanebench:Cart' is *, not a subclass of "
                      "pytest_benchmarks.Benchmark"),
        ("exiting", "*--benchmark-env: benchmark 'exiting' (pytest_benchmarks.benchmarks entry "
                    "point 'lanebench.exits:Lane') cannot be loaded: SystemExit: 3"),
        ("notasks", "*--benchmark-env: benchmark 'notasks' (pytest_benchmarks.benchmarks entry "
                    "point 'lanebench:NoTasks'): tasks() raised RuntimeError: the task list is "
                    "not there"),
        ("nospaces", "*--benchmark-env: benchmark 'nospaces' (pytest_benchmarks.benchmarks entry "
                     "point 'lanebench:NoSpaces'): spaces() for nospaces/near raised "
                     "RuntimeError: no spaces declared"),
        ("negative", "*--benchmark-env: benchmark 'negative': default_max_steps(negative/near) "
                     "is -5, not an integer >= 1 (--benchmark-max-steps overrides it)"),
        ("pusht", "*--benchmark-env: benchmark 'pusht' is registered by more than one package: "
                  "*; uninstall all but one"),
    ],
)  # fmt: skip
def test_a_broken_entry_point_is_one_line_and_spares_the_others(
    lane_project: pytest.Pytester, name: str, message: str
):
    result = lane_project.runpytest_subprocess("-p", "no:cacheprovider", f"--benchmark-env={name}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()
    # Not asked for, a broken entry point leaves the installed benchmarks running.
    spared = lane_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-episodes=2", "--snapshot-update"
    )
    spared.assert_outcomes(passed=4)
