"""The work of ``pytest-benchmarks report`` and ``history``: read the runs, check every output
path before any is written, and write the Markdown (to stdout or ``-o``), the chart and the page.
Both exit 0 whatever the gate says: failing on a regression is ``compare``'s job."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.metrics import history as runs_history
from pytest_benchmarks.metrics import history_page, html_report, views
from pytest_benchmarks.metrics.document import load_results
from pytest_benchmarks.metrics.outputs import chart_path, output_paths
from pytest_benchmarks.metrics.runs import (
    InputError,
    Judgement,
    Unjudgeable,
    judge_runs,
    load_run,
    task_name,
)


def report(args: argparse.Namespace) -> int:
    """Write the Markdown table, the chart and the page; exit 0: the gate is ``compare``'s."""
    runs = [load_run(path)[0] for path in (args.run, args.baseline) if path is not None]
    name = task_name(*runs)
    results, baseline = [_named(r, name) for r in load_results(runs[0])], None
    if args.baseline:
        baseline = [_named(r, name) for r in load_results(runs[1])]
    outputs = {"-o": args.output, "--png": args.png, "--html": args.html}
    output_paths(outputs, (args.run, args.baseline))
    if not math.isfinite(args.video_budget) or args.video_budget < 0:
        raise InputError(f"--video-budget: {args.video_budget}: a size in MB, 0 or more")
    chart_path(args.png)
    run = runs[0]["run"]
    interrupted = None
    if run.get("partial"):
        interrupted = f"the run is partial (exit status {run.get('exitstatus')})"
    judgement: Judgement | Exception | None = None
    if args.baseline:
        try:
            judgement = judge_runs(runs[1], runs[0], args.alpha, args.gate)
        except (Unjudgeable, InputError) as exc:  # said under the table: report exits 0
            judgement = exc
    text = views.markdown(results, baseline, judgement, interrupted)
    if args.output:
        write_atomic(args.output, text, fsync=False)
    else:
        print(text, end="")
    if args.png:
        views.chart(results, args.png, baseline)
    if args.html:
        baseline_run = runs[1]["run"] if args.baseline else None
        written = html_report.page(f"pytest-benchmarks report: {args.run.name}", results, run,
                                   baseline=baseline, baseline_run=baseline_run,
                                   judgement=judgement, interrupted=interrupted,
                                   folders=[args.run.parent, Path.cwd()],
                                   budget=round(args.video_budget * 1024**2))  # fmt: skip
        write_atomic(args.html, written, fsync=False)
    return 0


def history(args: argparse.Namespace) -> int:
    """Write the runs' history (Markdown, and a page and a chart); exit 0, as ``report``."""
    output_paths({"-o": args.output, "--png": args.png, "--html": args.html}, args.runs)
    chart_path(args.png)
    runs = [
        runs_history.Run(label, path, load_run(path)[0])
        for label, path in zip(runs_history.labels(args.runs), args.runs, strict=True)
    ]
    runs, order_note = runs_history.ordered(runs, args.as_given)
    series = runs_history.build(runs, args.alpha, args.gate)
    text = runs_history.markdown(series, order_note)
    if args.output:
        write_atomic(args.output, text, fsync=False)
    else:
        print(text, end="")
    if args.png:
        history_page.chart(series, args.png)
    if args.html:
        title = f"pytest-benchmarks history: {len(runs)} runs"
        written = history_page.page(title, series, order_note, args.alpha, args.gate)
        write_atomic(args.html, written, fsync=False)
    return 0


def _named(result: TaskResult, name: Callable[[TaskResult], str]) -> TaskResult:
    """The result under the name its runs are matched by (``runs.task_name``)."""
    env, _, key = name(result).partition("/")
    return replace(result, task=replace(result.task, env=env, key=key))
