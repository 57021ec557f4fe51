"""``pytest-benchmarks report RUN.json --html PAGE.html`` on real Meta-World runs: the page is
read back as a browser's parser reads it (lxml), and in the end-to-end tier opened in headless
Chromium, which must play its videos."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest
from lxml import html

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.cli import main
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics.document import build_metrics
from pytest_benchmarks.metrics.html_report import Videos, rows
from pytest_benchmarks.metrics.html_report import page as html_page
from pytest_benchmarks.metrics.runs import judge_runs, load

#: Reach with its expert against random actions: ten episodes are enough for the gate.
REACH = {"tasks": ["reach-v3"], "episodes": 10, "max_steps": 60, "sync": True}


def page(path: Path) -> html.HtmlElement:
    return html.fromstring(path.read_bytes())


def cells(row: html.HtmlElement) -> list[str]:
    return [" ".join(cell.text_content().split()) for cell in row.xpath("./th|./td")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The expert's run and random actions' run of reach-v3, no videos."""
    folder = tmp_path_factory.mktemp("runs")
    evaluate("metaworld", "scripted", **REACH, metrics=folder / "old.json")
    evaluate("metaworld", "random", **REACH, metrics=folder / "new.json")
    return folder / "old.json", folder / "new.json"


def test_a_regression_is_on_top_with_its_verdict_the_gate_and_what_changed(
    runs: tuple[Path, Path], tmp_path: Path
):
    old, new = runs
    out = tmp_path / "report.html"
    assert main(["report", str(new), "--baseline", str(old), "--html", str(out)]) == 0
    found = page(out)
    (row,) = found.xpath('//table[@id="tasks"]/tbody/tr')
    assert row.get("class") == "regression"
    task, success, baseline, _, verdict, test, episodes, *_ = cells(row)
    assert (task, success, episodes) == ("metaworld/reach-v3", "0/10 (0.0%)", "10 of 10")
    assert baseline.startswith("10/10") or baseline.startswith("9/10")
    judged = judge_runs(load(old), load(new), 0.05, "stat")
    comparison = judged.verdicts["metaworld/reach-v3"]
    assert verdict == f"regression ({comparison.test} p={comparison.p_value:.2g})"
    assert test.startswith(f"{comparison.test}, p=")
    # The closing line is compare's, word for word.
    gate = " ".join(found.xpath('//p[@id="gate"]')[0].text_content().split())
    assert gate == "Gate: " + " ".join(judged.lines()[-1].split())
    # The interval is drawn for a screen reader too.
    (drawing,) = row.xpath(".//svg")
    assert drawing.get("role") == "img" and "baseline" in drawing.get("aria-label")
    # The run block marks what the baseline ran differently: the policy, not the seed.
    settings = {
        cells(r)[0]: (r.get("class"), cells(r)[1:])
        for r in found.xpath('//table[@id="run"]/tbody/tr')
    }
    assert settings["policy"] == ("changed", ["random", "scripted"])
    assert settings["seed"] == (None, ["1000", "same"])
    # No video was recorded: the page says how to get them.
    (advice,) = found.xpath('//p[@id="no-videos"]')
    assert "--benchmark-video=failures" in advice.text_content()


def test_the_page_plays_failing_episodes_and_names_those_it_cannot(tmp_path: Path):
    """Two failing episodes recorded: both embedded; one removed from disk, it is named and the
    other still plays; a budget smaller than a video leaves both out, said in a line."""
    metrics = tmp_path / "run.json"
    evaluate("metaworld", "random", tasks=["reach-v3"], episodes=2, max_steps=6, sync=True,
             video="failures", image_size=32, metrics=metrics)  # fmt: skip
    recorded = sorted((tmp_path / "videos").rglob("*.mp4"))
    assert len(recorded) == 2
    out = tmp_path / "page.html"
    assert main(["report", str(metrics), "--html", str(out)]) == 0
    videos = page(out).xpath("//video")
    assert [v.get("aria-label") for v in videos] == [
        "metaworld/reach-v3, episode 0",
        "metaworld/reach-v3, episode 1",
    ]
    for video, path in zip(videos, recorded, strict=True):
        assert base64.b64decode(video.get("src").split(",", 1)[1]) == path.read_bytes()

    recorded[0].unlink()
    assert main(["report", str(metrics), "--html", str(out)]) == 0
    found = page(out)
    assert len(found.xpath("//video")) == 1
    captions = [" ".join(c.text_content().split()) for c in found.xpath("//figcaption")]
    assert captions[0].startswith(f"episode 0: cannot read {recorded[0]}")

    # A run moved elsewhere (its videos beside it) still plays what it recorded.
    moved = tmp_path.parent / f"{tmp_path.name}-moved"
    shutil.copytree(tmp_path, moved)
    (tmp_path / "videos").rename(tmp_path / "videos-elsewhere")
    assert main(["report", str(moved / "run.json"), "--html", str(moved / "page.html")]) == 0
    assert len(page(moved / "page.html").xpath("//video")) == 1
    (tmp_path / "videos-elsewhere").rename(tmp_path / "videos")

    assert main(["report", str(metrics), "--html", str(out), "--video-budget", "0.001"]) == 0
    found = page(out)
    assert not found.xpath("//video")
    assert "1 videos left out: the page embeds at most 0.001 MB" in found.text_content()


@pytest.mark.parametrize("budget", ["inf", "nan", "-1"])
def test_a_video_budget_that_is_no_size_is_refused_before_writing(
    runs: tuple[Path, Path], tmp_path: Path, capsys, budget: str
):
    out = tmp_path / "report.md"
    command = ["report", str(runs[1]), "-o", str(out), "--html", str(tmp_path / "page.html")]
    assert main([*command, "--video-budget", budget]) == 2
    assert capsys.readouterr().err.strip() == (
        f"pytest-benchmarks: error: --video-budget: {float(budget)}: a size in MB, 0 or more"
    )
    assert not out.exists()


def test_an_html_output_that_is_an_input_is_refused(runs: tuple[Path, Path], capsys):
    old, new = runs
    before = new.read_bytes()
    kept = old.read_bytes()
    assert main(["report", str(new), "--baseline", str(old), "--html", str(old)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith(f"--html: {old}: is also an input ({old}); writing it would replace "
                         "what is read: give another output path")  # fmt: skip
    assert (new.read_bytes(), old.read_bytes()) == (before, kept)
    page_path = new.with_name("page.html")
    assert main(["report", str(new), "-o", str(page_path), "--html", str(page_path)]) == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(f"-o and --html name one file ({page_path}); give each its own")
    )
    assert not page_path.exists()


def test_regressions_come_first_then_errors_then_the_rest():
    def result(name: str, wins: list[bool], error: str | None = None) -> TaskResult:
        task = TaskRef("toy", "corridor", name, 0, "")
        episodes = [EpisodeRecord(i, i, i, won, 5, 0.0, 0.0, 0.0) for i, won in enumerate(wins)]
        return TaskResult(task, episodes=episodes, planned=len(wins), error=error)

    old = [result(n, [True] * 12) for n in ("a", "b", "c")]
    new = [result("a", [True] * 12), result("b", [True] * 12, "boom"), result("c", [False] * 12)]
    judged = judge_runs(build_metrics(old, {}, "scripted"), build_metrics(new, {}, "scripted"),
                        0.05, "stat")  # fmt: skip
    order = [(r.id, r.kind) for r in rows(new, old, judged, Videos([], 0))]
    assert order == [("toy/c", "regression"), ("toy/b", "error"), ("toy/a", "held")]
    # A task only the baseline ran is named above the table, and an error is its row's verdict.
    old.append(result("d", [True] * 12))
    judged = judge_runs(build_metrics(old, {}, "scripted"), build_metrics(new, {}, "scripted"),
                        0.05, "stat")  # fmt: skip
    found = html.fromstring(
        html_page("t", new, {}, baseline=old, baseline_run={}, judgement=judged)
    )
    only = " ".join(found.xpath('//p[@id="only-old"]')[0].text_content().split())
    assert only == "In the baseline, not in this run: toy/d."
    (errored,) = found.xpath('//tr[@class="error"]')
    assert cells(errored)[4] == "error: boom"


@pytest.mark.e2e
def test_chromium_opens_the_page_plays_its_videos_and_keeps_a_screenshot(tmp_path: Path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium here: bash scripts/install_browser.sh installs it")
    metrics = tmp_path / "run.json"
    evaluate("metaworld", "random", tasks=["reach-v3"], episodes=2, max_steps=6, sync=True,
             video="failures", image_size=32, metrics=metrics)  # fmt: skip
    out = tmp_path / "page.html"
    assert main(["report", str(metrics), "--html", str(out)]) == 0
    headless = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--virtual-time-budget=10000"]  # fmt: skip
    dom = subprocess.run([*headless, "--dump-dom", out.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    played = html.fromstring(dom).xpath("//video")
    # 7 frames (the reset and 6 steps) at 30 frames a second, as the browser decoded them.
    durations = [float(v.get("data-duration")) for v in played]
    assert len(durations) == 2 and all(abs(d - 7 / 30) < 0.04 for d in durations), durations
    shots = Path("build") / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    subprocess.run([*headless, "--window-size=1200,900", f"--screenshot={shots / 'report.png'}",
                    out.as_uri()], capture_output=True, timeout=120, check=True)  # fmt: skip
    assert (shots / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
