"""``pytest-benchmarks history`` over real Meta-World runs of reach-v3: its expert with more and
more of its actions replaced by random ones. The steps are judged as ``compare`` judges them,
a run with other settings is shown apart saying why, and the page is read back as a browser's
parser reads it (lxml), and in the end-to-end tier opened in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from lxml import html

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.cli import main
from pytest_benchmarks.metrics.runs import judge_runs, load

REACH = {"tasks": ["reach-v3"], "episodes": 10, "max_steps": 60, "sync": True}
#: The runs in the order they are made: the expert, the expert again, then all random actions.
NOISE = {"a.json": 0.0, "b.json": 0.0, "c.json": 1.0}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three runs one after the other, and a fourth with a shorter step limit (a run's start
    is recorded to the second: each starts in a second of its own)."""
    folder = tmp_path_factory.mktemp("history")
    made = {}
    for name, noise in NOISE.items():
        made[name] = folder / name
        evaluate("metaworld", f"scripted+noise:{noise}", **REACH, metrics=made[name])
        time.sleep(1.0)
    made["short.json"] = folder / "short.json"
    evaluate("metaworld", "scripted", **{**REACH, "max_steps": 30}, metrics=made["short.json"])
    return made


def table(markdown: str, series: int) -> list[list[str]]:
    """A series' Markdown table, as rows of cells (header first)."""
    block = markdown.split("### Series ")[series].split("\n\n")
    rows = [line for part in block for line in part.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_runs_in_recorded_order_each_step_judged_as_compare_judges_it(
    runs: dict[str, Path], tmp_path: Path
):
    given = [runs["c.json"], runs["a.json"], runs["short.json"], runs["b.json"]]
    markdown = tmp_path / "history.md"
    assert main(["history", *map(str, given), "-o", str(markdown)]) == 0
    text = markdown.read_text()
    # Recorded order, whatever the order given; the short run stands apart, saying why.
    head, overall, task = table(text, 1)[0], table(text, 1)[1], table(text, 1)[2]
    assert head == ["task", "`a.json`", "`b.json`", "`c.json`"]
    assert task[0] == "`metaworld/reach-v3`"
    assert task[1].startswith(("90% [", "100% [")) and task[2] == task[1]  # one seed, one expert
    assert task[3].startswith("0% [") and task[3].endswith("▼")
    assert overall[3] == task[3]
    assert "### Series 2: 1 runs (short.json)" in text
    apart = text.split("### Series 2")[1].splitlines()[2]
    assert apart.startswith("Shown apart: not comparable with c.json: ")
    assert "max_steps" in apart
    # Each step's line is the gate's closing line, as compare prints it.
    closing = judge_runs(load(runs["b.json"]), load(runs["c.json"]), 0.05, "stat").lines()[-1]
    assert f"- `b.json` → `c.json`: {closing} (`metaworld/reach-v3` regression (" in text
    # The first run against the last: a drift no single step shows would be flagged here.
    span = judge_runs(load(runs["a.json"]), load(runs["c.json"]), 0.05, "stat").lines()[-1]
    assert (
        f"- first to last: `a.json` → `c.json`: {span} (`metaworld/reach-v3` regression (" in text
    )

    # As given: the random run first, so the step to the expert is an improvement.
    assert main(["history", "--as-given", *map(str, given), "-o", str(markdown)]) == 0
    assert table(markdown.read_text(), 1)[2][2].endswith("▲")


def test_the_page_draws_each_task_over_the_runs_and_folds_none_of_few(
    runs: dict[str, Path], tmp_path: Path
):
    out, chart = tmp_path / "history.html", tmp_path / "history.png"
    given = [runs[name] for name in ("a.json", "b.json", "c.json", "short.json")]
    assert main(["history", *map(str, given), "--html", str(out), "--png", str(chart)]) == 0
    page = html.fromstring(out.read_bytes())
    assert [h.text_content() for h in page.xpath("//h2")] == [
        "Series 1: 3 runs",
        "Series 2: 1 runs",
    ]
    first = page.xpath("//section")[0]
    (row,) = first.xpath('.//tr[@class="regression"]')
    assert row.xpath("./th")[0].text_content() == "metaworld/reach-v3"
    (drawing,) = row.xpath(".//svg")
    assert drawing.get("role") == "img"
    assert drawing.get("aria-label").endswith("c.json 0% [0–28] ▼ (regression)")
    assert len(drawing.xpath(".//circle")) == 3 and drawing.xpath('.//circle[@class="regression"]')
    assert not page.xpath("//details")
    (span,) = first.xpath('.//div[@class="span"]')
    assert "First to last: a.json → c.json" in " ".join(span.text_content().split())
    (apart,) = page.xpath('//p[contains(@class, "apart")]')
    assert "not comparable with c.json" in apart.text_content()
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_output_that_is_an_input_or_a_bad_chart_is_refused_before_writing(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    kept = runs["a.json"].read_bytes()
    assert main(["history", str(runs["a.json"]), str(runs["b.json"]),
                 "--html", str(runs["a.json"])]) == 2  # fmt: skip
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            f"--html: {runs['a.json']}: is also an input ({runs['a.json']}); writing it would "
            "replace what is read: give another output path"
        )
    )
    assert runs["a.json"].read_bytes() == kept
    out = tmp_path / "h.md"
    assert (
        main(["history", str(runs["a.json"]), "-o", str(out), "--png", str(tmp_path / "h.gif")])
        == 2
    )
    assert "--png: " in capsys.readouterr().err and not out.exists()
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema_version": 1})[:-3])
    assert main(["history", str(runs["a.json"]), str(broken)]) == 2
    assert capsys.readouterr().err.startswith(f"pytest-benchmarks: error: {broken}: not valid JSON")


@pytest.mark.e2e
def test_chromium_opens_the_history_page_and_keeps_a_screenshot(
    runs: dict[str, Path], tmp_path: Path
):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium here: bash scripts/install_browser.sh installs it")
    out = tmp_path / "history.html"
    assert main(["history", *(str(p) for p in runs.values()), "--html", str(out)]) == 0
    headless = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run([*headless, "--dump-dom", out.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    page = html.fromstring(dom)
    assert len(page.xpath("//table[contains(@class, 'history')]")) == 2
    assert page.xpath('//tr[@class="regression"]//svg')
    shots = Path("build") / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    subprocess.run([*headless, "--window-size=1200,700", f"--screenshot={shots / 'history.png'}",
                    out.as_uri()], capture_output=True, timeout=120, check=True)  # fmt: skip
    assert (shots / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
