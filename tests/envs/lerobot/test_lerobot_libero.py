"""``lerobot:libero``: LeRobot's own LIBERO env, made by its config, its observations through
LeRobot's env preprocessor (``LiberoProcessorStep``: the 8-value state, the images turned) as
``lerobot-eval`` runs it, and episode *i* from init state *i* whatever the batch size: every
observation of every step equals the native ``libero`` benchmark's ``lerobot`` layout."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core import catalog

pytest.importorskip("lerobot.envs.configs", reason="LeRobot is not installed")
if catalog.get("libero").missing():
    pytest.skip(catalog.get("libero").missing(), allow_module_level=True)

ROOT = Path(__file__).parents[3]
SIZE = 48
#: A policy that moves the arm by what it reads and writes a digest of every batch it is given
#: (one JSON line each) to the file ``$SEEN``.
SEEN = """
import hashlib, json, os
import numpy as np

class Seen:
    def __init__(self, config=None, num_envs=1):
        self.out = open(os.environ["SEEN"], "a")
    def reset(self, slots, seeds):
        self.out.write(json.dumps(["reset", list(slots), list(seeds)]) + "\\n")
    def act(self, batch):
        digest = {name: [list(np.shape(value)),
                         hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()]
                  for name, value in sorted(batch.items()) if name != "task"}
        self.out.write(json.dumps(digest) + "\\n")
        self.out.flush()
        state = batch["observation.state"]
        action = np.zeros((len(state), 7), np.float32)
        action[:, 0], action[:, 1], action[:, 2] = np.tanh(state[:, 0] * 10), 0.5, -0.3
        return action
    def identity(self):
        return {"source": "module", "id": "seen", "revision": None}

def make(config, num_envs):
    return Seen(config, num_envs)
"""


def seen(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.long
def test_lerobot_libero_sees_what_the_native_lerobot_layout_sees_step_for_step(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makepyfile(mypolicies=SEEN)
    pytester.makepyfile(test_lr=(ROOT / "benchmarks" / "test_lerobot_types.py").read_text())
    # The page's command, its checkpoint this policy, smaller: 2 episodes side by side.
    page = (ROOT / "docs" / "benchmarks" / "lerobot.md").read_text()
    (block,) = [b for b in page.split("```bash\n")[1:] if "lerobot:libero " in b.split("```")[0]]
    command = shlex.split(block.split("\n```")[0])
    assert command[:2] == ["pytest", "benchmarks"]
    args = [a.replace("lerobot:CHECKPOINT", "module:mypolicies:make") for a in command[2:]]
    env_arg = next(a for a in args if a.startswith("--benchmark-env-arg="))
    args[args.index(env_arg)] = f"{env_arg},observation_height={SIZE},observation_width={SIZE}"
    monkeypatch.setenv("SEEN", str(pytester.path / "lerobot.jsonl"))
    run = pytester.runpytest("-p", "no:cacheprovider", "-k", "test_rollout", *args,
                                        "--benchmark-episodes=2", "--benchmark-max-steps=3",
                                        "--benchmark-batch-size=2")  # fmt: skip
    run.assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "benchmark-results" / "metrics.json").read_text())[
        "results"
    ]
    assert row["id"] == "lerobot:libero/libero_spatial/1" and row["error"] is None
    # The native benchmark's lerobot layout, in this process, the same episodes.
    monkeypatch.setenv("SEEN", str(pytester.path / "native.jsonl"))
    monkeypatch.syspath_prepend(str(pytester.path))
    try:
        from mypolicies import Seen  # type: ignore[import-not-found]

        native = evaluate("libero", Seen(), obs="lerobot", image_size=SIZE, episodes=2,
                          max_steps=3, batch_size=2, tasks=["libero_spatial/1"])  # fmt: skip
    finally:
        sys.modules.pop("mypolicies", None)
    assert native.results[0].error is None
    theirs = seen(pytester.path / "lerobot.jsonl")
    # Episodes 0 and 1 side by side: slot 1's env starts from init state 1, as lerobot-eval's
    # second sub-env does (each env the harness makes is a first sub-env of its own).
    assert [e for e in theirs if isinstance(e, list)] == [["reset", [0, 1], [1000, 1001]]]
    assert theirs[1]["observation.state"][0] == [2, 8]  # LiberoProcessorStep's flat state
    assert theirs[1]["observation.images.image"][0] == [2, SIZE, SIZE, 3]
    assert seen(pytester.path / "native.jsonl") == theirs
    steps = [(e["seed"], e["steps"]) for e in row["episodes"]]
    assert steps == [(e.seed, e.steps) for e in native.results[0].episodes]
