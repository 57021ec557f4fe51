"""LeRobot's own results gated: ``eval_info.json`` files written by LeRobot's ``eval_policy_all``
(the multi-task layout ``lerobot-eval`` writes) and ``eval_policy`` (the single-env layout) on a
real vector env, read by ``pytest-benchmarks compare`` and ``report``; a policy weakened on
purpose is caught, the same policy is not; LeRobot main's count keys are checked; a mix with
this plugin's metrics file is matched by task name and judged unpaired."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from pytest_benchmarks.cli import main
from pytest_benchmarks.core import validation
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics import run_info
from pytest_benchmarks.metrics.document import build_metrics, write_metrics

pytest.importorskip("lerobot.scripts.lerobot_eval", reason="LeRobot is not installed")

from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.pretrained import PreTrainedPolicy

EPISODES, SEED = 20, 1000


class Line(gym.Env[dict[str, np.ndarray], np.ndarray]):
    """A point steered along a line to a target drawn from the seed; success on reaching it."""

    metadata = {"render_fps": 10}  # noqa: RUF012 (gymnasium's own attribute)

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {"agent_pos": gym.spaces.Box(-2.0, 2.0, (2,), np.float32)}
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._max_episode_steps = 20

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.pos, self.target = 0.0, float(self.np_random.uniform(-1.0, 1.0))
        return self._observe(), {}

    def _observe(self) -> dict[str, np.ndarray]:
        return {"agent_pos": np.array([self.pos, self.target], np.float32)}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        self.pos += float(np.clip(action[0], -0.2, 0.2))
        success = abs(self.pos - self.target) < 0.1
        return self._observe(), float(success), success, False, {"is_success": success}


class Steer(PreTrainedPolicy):
    """Steers toward the target; weakened, away from it unless the target lies below -0.5."""

    config_class = ACTConfig
    name = "steer"

    def __init__(self, weak: bool) -> None:
        super().__init__(ACTConfig())
        self.weak = weak

    def get_optim_params(self) -> list[Any]:
        return []

    def reset(self) -> None:
        pass

    def predict_action_chunk(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, batch: dict[str, torch.Tensor]) -> Any:
        raise NotImplementedError

    def select_action(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        state = batch["observation.state"]
        way = torch.sign(state[:, 1:2] - state[:, 0:1])
        if self.weak:
            way = torch.where(state[:, 1:2] > -0.5, -way, way)
        return way * 0.2


def eval_info(path: Path, weak: bool, single: bool = False) -> Path:
    """An ``eval_info.json`` as lerobot-eval writes it, from LeRobot's own evaluation."""
    from lerobot.processor import converters
    from lerobot.processor.pipeline import PolicyProcessorPipeline
    from lerobot.scripts.lerobot_eval import eval_policy, eval_policy_all

    observations = PolicyProcessorPipeline(steps=[])
    actions = PolicyProcessorPipeline(steps=[], to_transition=converters.policy_action_to_transition,
                                      to_output=converters.transition_to_policy_action)  # fmt: skip
    pipelines = (observations, observations, observations, actions)
    if single:
        info = eval_policy(gym.vector.SyncVectorEnv([Line] * 4), Steer(weak), *pipelines,
                           n_episodes=EPISODES, start_seed=SEED)  # fmt: skip
    else:
        envs = {"line": {i: gym.vector.SyncVectorEnv([Line] * 4) for i in range(2)}}
        info = eval_policy_all(envs, Steer(weak), *pipelines, n_episodes=EPISODES,
                               start_seed=SEED)  # fmt: skip
    path.write_text(json.dumps(info, indent=2))  # as lerobot_eval's main writes it
    return path


@pytest.fixture(scope="module")
def infos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("eval_info")
    return {
        "good": eval_info(folder / "good.json", weak=False),
        "again": eval_info(folder / "again.json", weak=False),
        "weak": eval_info(folder / "weak.json", weak=True),
        "single": eval_info(folder / "single.json", weak=False, single=True),
        "single-weak": eval_info(folder / "single-weak.json", weak=True, single=True),
    }


def compare(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, list[str], str]:
    status = main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_a_weakened_policy_is_caught_and_the_same_one_passes(infos, capsys):
    weak = json.loads(infos["weak"].read_text())
    failures = [EPISODES - sum(t["metrics"]["successes"]) for t in weak["per_task"]]
    assert min(failures) >= 5, failures  # enough lost episodes for a paired test at 20
    status, lines, _ = compare(capsys, infos["good"], infos["weak"])
    assert status == 1
    assert lines[0] == (f"{infos['good']}: lerobot-eval's eval_info.json, 2 tasks; it holds no "
                        "seeds, so its episodes pair by index with another such file (both runs "
                        "taken to start at the same --seed), and with no other")  # fmt: skip
    verdicts = [line for line in lines if line.startswith("  REGRESSION line/")]
    assert len(verdicts) == 2 and all(line.endswith("→ regression") for line in verdicts), lines
    assert all("McNemar" in line for line in verdicts), lines  # paired by index
    assert lines[-1].endswith("→ REGRESSION")
    status, lines, _ = compare(capsys, infos["good"], infos["again"])
    assert status == 0 and lines[-1].endswith("→ no regression"), lines


def test_the_single_env_layout_pairs_by_seed(infos, capsys):
    status, lines, _ = compare(capsys, infos["single"], infos["single-weak"])
    assert status == 1
    assert lines[0] == (f"{infos['single']}: lerobot-eval's single-env eval_info.json, "
                        f"{EPISODES} episodes with their seeds (one task, named eval/0)")  # fmt: skip
    assert any(line.startswith("  REGRESSION eval/0") and "McNemar" in line for line in lines)


def test_lerobot_main_count_keys_are_read_and_checked(infos, capsys, tmp_path):
    """LeRobot's main branch writes n_success, pc_success and pc_success_ci95 beside each task's
    flags: read alike, and a count that disagrees with the flags is refused in one line."""
    info = json.loads(infos["weak"].read_text())
    for task in info["per_task"]:
        flags = task["metrics"]["successes"]
        task.update(n_episodes=len(flags), n_success=sum(flags),
                    pc_success=100 * sum(flags) / len(flags), pc_success_ci95=[10.0, 90.0])  # fmt: skip
    main_layout = tmp_path / "main.json"
    main_layout.write_text(json.dumps(info))
    status, lines, _ = compare(capsys, infos["good"], main_layout)
    assert status == 1 and lines[-1].endswith("→ REGRESSION")
    info["per_task"][1]["n_success"] += 1
    main_layout.write_text(json.dumps(info))
    status, lines, err = compare(capsys, infos["good"], main_layout)
    flags = info["per_task"][1]["metrics"]["successes"]
    assert (status, lines) == (2, [])
    assert err.strip() == (
        f"pytest-benchmarks: error: {main_layout}: per_task[1]: n_success is {sum(flags) + 1} "
        f"but its metrics.successes give {sum(flags)}"
    )


def test_a_mix_with_a_metrics_file_is_matched_by_name_and_judged_unpaired(infos, capsys, tmp_path):
    """This plugin's run of the same tasks (named line/0 and line/1, as lerobot:TYPE names them)
    against LeRobot's file: matched by name, unpaired (Fisher), since one side has no seeds."""
    good = json.loads(infos["good"].read_text())
    results = [
        TaskResult(
            TaskRef("lerobot:line", "line", str(t["task_id"]), t["task_id"], "steer to the target",
                    f"line/{t['task_id']}"),
            [EpisodeRecord(i, SEED + i, 0, bool(s), 5, 1.0, 1.0, 0.1)
             for i, s in enumerate(t["metrics"]["successes"])],
            planned=EPISODES,
        )
        for t in good["per_task"]
    ]  # fmt: skip
    ours = tmp_path / "metrics.json"
    settings = validation.build(root=tmp_path, env="metaworld", episodes=EPISODES, metrics=ours)
    block = run_info.run_block(
        run_info.static_info([], tmp_path, settings), settings, 0, 1.0, False, 0
    )
    write_metrics(ours, build_metrics(results, block, "module:steer"))
    status, lines, err = compare(capsys, ours, infos["weak"])
    assert not err, err
    verdicts = [line for line in lines if line.startswith("  ") and " line/" in line]
    assert len(verdicts) == 2 and all("Fisher" in line for line in verdicts), lines
    assert status in (0, 1)  # unpaired at 20 episodes: judged, whichever way the counts say
    report = tmp_path / "report.md"
    assert main(["report", str(infos["weak"]), "--baseline", str(ours), "-o", str(report)]) == 0
    table = report.read_text()
    assert "| `line/0` | 20/20" in table and "| – |" in table, table  # eval_info has no steps
    # history over the mix: one row per task, whichever file named it.
    history = tmp_path / "history.md"
    given = [ours, infos["good"], infos["weak"]]
    assert main(["history", "--as-given", *map(str, given), "-o", str(history)]) == 0
    text = history.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `line/")]
    cells = [[c.strip() for c in row.strip("|").split("|")][1:] for row in rows]
    assert len(rows) == 2 and all(len(c) == 3 and "–" not in c for c in cells), text


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["per_task"][0].pop("metrics"), "per_task[0]: not an object with task_group, task_id and metrics"),
        (lambda d: d["per_task"][0]["metrics"]["successes"].append("yes"), "per_task[0].metrics.successes: 'yes' is not a success flag (true/false, 0/1)"),
        (lambda d: d["per_task"][1].update(task_id=0), "per_task[1] repeats task line/0 (per_task[0])"),
        (lambda d: d["per_task"][0]["metrics"]["sum_rewards"].pop(), "per_task[0].metrics.sum_rewards: not a list of 20 numbers, one per episode"),
        (lambda d: d["overall"].update(n_episodes=3), "overall.n_episodes is 3 but per_task holds 40 episodes"),
        (lambda d: d["per_task"][0].update(pc_success=999), "per_task[0]: pc_success is 999, not a percentage (0 to 100)"),
        (lambda d: d["per_task"][0].update(pc_success=12.5), "per_task[0]: pc_success is 12.5 but its successes give 100 (20/20)"),
        (lambda d: d["per_task"][0].update(pc_success_ci95=[-5, 700]), "per_task[0]: pc_success_ci95 is [-5, 700], not an interval [low, high] within 0 to 100"),
        (lambda d: d["overall"].update(pc_success=-3.0), "overall: pc_success is -3.0, not a percentage (0 to 100)"),
    ],
)  # fmt: skip
def test_a_damaged_eval_info_is_one_line(infos, capsys, tmp_path, edit, message):
    info = json.loads(infos["good"].read_text())
    edit(info)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(info))
    status, lines, err = compare(capsys, infos["good"], bad)
    assert (status, lines, err.strip()) == (2, [], f"pytest-benchmarks: error: {bad}: {message}")


def test_merge_refuses_an_eval_info(infos, capsys, tmp_path):
    assert main(["merge", str(infos["good"]), "-o", str(tmp_path / "m.json")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"pytest-benchmarks: error: {infos['good']}: lerobot-eval's eval_info.json, not a "
        "pytest-benchmarks metrics file; compare and report read it, merge and resume do not"
    )


def test_nan_rewards_as_lerobot_writes_them_are_read(infos, capsys, tmp_path):
    """LeRobot writes NaN for an aggregate of nothing; a file with NaN rewards still compares."""
    info = json.loads(infos["good"].read_text())
    info["per_task"][0]["metrics"]["sum_rewards"] = [math.nan] * EPISODES
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(info))
    status, lines, _ = compare(capsys, infos["good"], nan)
    assert status == 0, lines


def test_the_ci_action_gates_lerobot_eval_s_own_files(infos, tmp_path):
    """The repository's action (action.yml) over two ``eval_info.json`` as lerobot-eval wrote
    them: the weakened policy fails the job, with the summary and the page written first."""
    import os
    import sys

    from action_steps import run_action

    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    ran = run_action({"run": str(infos["weak"]), "baseline": str(infos["good"]),
                      "install": "false"}, tmp_path, path)  # fmt: skip
    assert ran.outputs["gate"] == {"status": "1"} and ran.statuses["Fail on a regression"] == 1
    rows = [line for line in ran.summary.splitlines() if line.startswith("| `line/")]
    assert len(rows) == 2 and all("**regression** (McNemar" in row for row in rows), ran.summary
    assert (tmp_path / "pytest-benchmarks-report.html").read_text().count('class="regression"') == 2
    ran = run_action({"run": str(infos["again"]), "baseline": str(infos["good"]),
                      "install": "false"}, tmp_path, path)  # fmt: skip
    assert not ran.failed and ran.outputs["gate"] == {"status": "0"}


def test_the_html_report_plays_the_videos_lerobot_eval_rendered(infos, tmp_path):
    """``video_paths`` as lerobot-eval lists them (the first episodes', beside the file): a
    failing episode's video is embedded; a file two tasks name (LeRobot 0.6 renders every task
    into one folder under the same names) is shown as neither's, saying why."""
    import base64

    from lxml import html

    from pytest_benchmarks.engine.video import encode

    weak = json.loads(infos["weak"].read_text())
    frames = [np.full((16, 16, 3), 40 * i, np.uint8) for i in range(4)]
    for task in weak["per_task"]:
        folder = f"videos/{task['task_group']}_{task['task_id']}"
        task["metrics"]["video_paths"] = [f"{folder}/eval_episode_{i}.mp4" for i in range(4)]
        for name in task["metrics"]["video_paths"]:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            encode(tmp_path / name, frames)
    run = tmp_path / "eval_info.json"
    run.write_text(json.dumps(weak))
    page = tmp_path / "page.html"
    assert main(["report", str(run), "--html", str(page)]) == 0
    found = html.fromstring(page.read_bytes())
    first = weak["per_task"][0]
    failing = [i for i, won in enumerate(first["metrics"]["successes"][:4]) if not won]
    assert failing, first["metrics"]["successes"]
    label = f"{first['task_group']}/{first['task_id']}"
    played = {v.get("aria-label"): v.get("src") for v in found.xpath("//video")}
    for i in failing:
        data = base64.b64decode(played[f"{label}, episode {i}"].split(",", 1)[1])
        assert data == (tmp_path / first["metrics"]["video_paths"][i]).read_bytes()

    for task in weak["per_task"]:
        task["metrics"]["video_paths"] = weak["per_task"][0]["metrics"]["video_paths"]
    run.write_text(json.dumps(weak))
    assert main(["report", str(run), "--html", str(page)]) == 0
    found = html.fromstring(page.read_bytes())
    assert not found.xpath("//video")
    captions = [" ".join(c.text_content().split()) for c in found.xpath("//figcaption")]
    shared = first["metrics"]["video_paths"][failing[0]]
    assert any(
        f"not shown: lerobot-eval wrote {shared} for 2 tasks" in caption for caption in captions
    ), captions
