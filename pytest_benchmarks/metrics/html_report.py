"""The HTML report: one self-contained page of a run, to look at rather than read.

It holds the overall line and the gate's closing line, a sortable table of the tasks
(regressions first) with each interval drawn beside the baseline's, the videos of each task's
failing episodes played in the page (embedded, up to a size budget; those left out are said),
and the run block with what differs from the baseline marked. It opens from disk: no server,
no network, no script or style from elsewhere.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.metrics import eval_info
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.metrics.runs import Judgement
from pytest_benchmarks.metrics.views import (
    gate_line,
    mean_steps,
    overall_text,
    verdict_kind,
    verdict_text,
)

#: Videos embedded in one page, in bytes: past it a video is named, not embedded.
VIDEO_BUDGET = 64 * 1024**2
#: The run block's settings the page shows, in this order (the rest are in the JSON).
RUN_KEYS = (
    "policy", "envs", "tasks", "episodes", "seed", "max_steps", "obs", "image_size", "render",
    "batch_size", "device", "gate", "alpha", "sequential", "video", "git_commit", "host",
    "started_at", "duration_s", "partial", "exitstatus",
)  # fmt: skip
#: Without a baseline, each task's failing videos are shown open up to this many tasks.
OPEN_AT_MOST = 10
#: Settings every run has its own of: never marked as differing from the baseline.
OWN = frozenset({"started_at", "duration_s"})


@dataclass
class Video:
    """One failing episode's video: where it plays from, or why it does not."""

    index: int
    #: The episode succeeded in the baseline and fails now.
    newly_failed: bool
    source: str | None = None
    problem: str | None = None


@dataclass
class Row:
    """One task as the page shows it."""

    id: str
    rate: float | None
    interval: tuple[float, float]
    cell: str
    baseline: str
    baseline_rate: float | None
    baseline_interval: tuple[float, float]
    verdict: str
    #: The test that reached it, its p-value, Holm's step and a sequential gate's decision.
    test: str
    kind: str
    episodes: str
    steps: str
    time: float
    error: str | None
    failures: int
    videos: list[Video] = field(default_factory=list)

    @property
    def order(self) -> int:
        """Regressions first, then errors, then the rest."""
        return {"regression": 0, "error": 1}.get(self.kind, 2)


class Videos:
    """Reads failing episodes' videos into the page within ``budget`` bytes."""

    def __init__(self, folders: list[Path], budget: int) -> None:
        self.folders = folders
        self.left = budget
        self.left_out = 0

    def video(self, episode: EpisodeRecord, newly_failed: bool) -> Video:
        found = Video(episode.index, newly_failed)
        if episode.video is None:
            found.problem = episode.video_error or "no video recorded"
            return found
        path = self._find(Path(episode.video))
        try:
            size = path.stat().st_size
            if size > self.left:
                self.left_out += 1
                found.problem = f"left out: {path} ({_size(size)}; over the page's budget)"
                return found
            data = path.read_bytes()
        except OSError as exc:
            found.problem = f"cannot read {path}: {exc.strerror or type(exc).__name__}"
            return found
        self.left -= len(data)
        found.source = "data:video/mp4;base64," + base64.b64encode(data).decode("ascii")
        return found

    def _find(self, path: Path) -> Path:
        """A recorded path as given, else the same file in the ``videos/`` folder beside the
        metrics file (a run moved, copied or downloaded), else relative to each folder."""
        if path.exists():
            return path
        parts, candidates = path.parts, []
        if "videos" in parts:
            tail = Path(*parts[len(parts) - parts[::-1].index("videos") :])
            candidates += [folder / "videos" / tail for folder in self.folders]
        if not path.is_absolute():
            candidates += [folder / path for folder in self.folders]
        return next((found for found in candidates if found.exists()), path)


def rows(
    results: list[TaskResult],
    baseline: list[TaskResult] | None,
    judgement: Judgement | Exception | None,
    videos: Videos,
) -> list[Row]:
    """The page's rows, regressions first, then by task."""
    before = {r.task.id: r for r in baseline or []}
    judged = judgement.verdicts if isinstance(judgement, Judgement) else {}
    problems = judgement.problems if isinstance(judgement, Judgement) else {}
    made = [
        _row(r, before.get(r.task.id), judged.get(r.task.id), problems.get(r.task.id),
             baseline is not None, videos)
        for r in results
    ]  # fmt: skip
    return sorted(made, key=lambda row: (row.order, row.id))


def _row(
    result: TaskResult,
    old: TaskResult | None,
    verdict: Comparison | None,
    problem: str | None,
    compared: bool,
    videos: Videos,
) -> Row:
    n = result.n_episodes
    kind = "error" if result.error else verdict_kind(verdict)
    text = verdict_text(verdict, problem, old is not None) if compared else ""
    if result.error:
        text = f"error: {result.error}"
    episodes = f"{n} of {result.planned}"
    if result.stopped:
        episodes += f" (stopped: {result.stopped})"
    won = {e.index for e in old.episodes if e.success} if old is not None else set()
    failing = [e for e in result.episodes if not e.success]
    return Row(
        id=result.task.id,
        rate=result.pc_success,
        interval=result.ci95,
        cell=f"{result.successes}/{n}" if n else "–",
        baseline=f"{old.successes}/{old.n_episodes}" if old is not None and old.n_episodes else "–",
        baseline_rate=old.pc_success if old is not None else None,
        baseline_interval=old.ci95 if old is not None else (0.0, 100.0),
        verdict=text,
        test=_test(verdict),
        kind=kind,
        episodes=episodes,
        steps=mean_steps(result),
        time=result.eval_s,
        error=result.error,
        failures=len(failing),
        videos=[videos.video(e, e.index in won) for e in failing],
    )


def _test(verdict: Comparison | None) -> str:
    if verdict is None:
        return ""
    parts = [f"{verdict.test}, p={verdict.p_value:.2g}"]
    parts += [part for part in (verdict.procedure, verdict.decision) if part]
    return "; ".join(parts)


def run_block(
    run: dict[str, Any], old: dict[str, Any] | None
) -> list[tuple[str, str, str | None, bool]]:
    """The settings shown: (name, value, the baseline's value where it differs, whether that
    difference is marked: a run's own start and duration differ without meaning anything)."""
    shown = []
    for key in RUN_KEYS:
        if key not in run and (old is None or key not in old):
            continue
        value = _text(run.get(key))
        other = None if old is None else _text(old.get(key))
        differs = other is not None and other != value
        shown.append((key, value, other if differs else None, differs and key not in OWN))
    fingerprint = run.get("fingerprint") or {}
    old_fp = (old or {}).get("fingerprint") or {}
    for name, version in sorted((fingerprint.get("packages") or {}).items()):
        before = (old_fp.get("packages") or {}).get(name) if old is not None else None
        changed = before is not None and before != version
        shown.append((f"package {name}", _text(version), _text(before) if changed else None,
                      changed))  # fmt: skip
    return shown


def _size(size: int) -> str:
    """A file's size in the unit that reads best."""
    return f"{size / 1024**2:.1f} MB" if size >= 1024**2 else f"{size / 1024:.1f} KB"


def _text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "–"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "–"
    return "–" if value is None else str(value)


def page(
    title: str,
    results: list[TaskResult],
    run: dict[str, Any],
    *,
    baseline: list[TaskResult] | None = None,
    baseline_run: dict[str, Any] | None = None,
    judgement: Judgement | Exception | None = None,
    interrupted: str | None = None,
    folders: list[Path] | None = None,
    budget: int = VIDEO_BUDGET,
) -> str:
    """The whole page, as text."""
    videos = Videos(folders or [], budget)
    shown = rows(results, baseline, judgement, videos)
    recorded = any(e.video or e.video_error for r in results for e in r.episodes)
    return render(
        "report.html",
        title=title,
        overall=overall_text(results),
        gate_line=None if judgement is None else gate_line(judgement),
        notes=judgement.notes if isinstance(judgement, Judgement) else [],
        interrupted=interrupted,
        rows=shown,
        compared=baseline is not None,
        recorded=recorded,
        left_out=videos.left_out,
        few_videos=sum(1 for row in shown if row.videos) <= OPEN_AT_MOST,
        budget_mb=f"{budget / 1024**2:.3g}",
        only_old=judgement.only_old if isinstance(judgement, Judgement) else [],
        settings=run_block(run, baseline_run),
        from_lerobot=run.get("source") == eval_info.SOURCE,
    )


def render(template: str, **values: Any) -> str:
    """A page of ``templates/``, every value escaped; a value the template names and is not
    given is an error, not a blank."""
    return _templates().get_template(template).render(**values)


@functools.cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_benchmarks.metrics", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
