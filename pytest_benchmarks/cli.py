"""``pytest-benchmarks merge | compare | report | record-build | slurm | plan | drift``: work
with a run's files outside pytest, submit a run to Slurm, and plan and check a gate before a
run.

``merge`` joins the metrics of CI shards (or xdist remote machines) into one run and refuses
inputs that overlap, were made with different settings or cut with different shard counts;
``compare`` applies the regression gate's statistics to two runs and exits 1 when a task's
success rate dropped significantly, 3 when it cannot judge (a task errored or ran no episode,
or the runs share no task);
``report`` writes a Markdown table (for ``$GITHUB_STEP_SUMMARY``), a chart and an HTML page;
``history`` shows success rates across runs, each step judged by the gate; all read
``lerobot-eval``'s ``eval_info.json`` as a run too, in any mix with metrics files;
``record-build`` turns the episodes of a ``--benchmark-record`` run that stopped before its
dataset was written (``DIR.parts``) into the LeRobotDataset;
``plan`` simulates a planned gate's power, false alarms and episodes used; ``drift`` resets
each snapshot's episodes under the installed environment and says which initial states moved.
Bad input (and an output path that is not a regular file) is one line on stderr and exit
status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_benchmarks.cluster import slurm
from pytest_benchmarks.core.settings import OPTIONS
from pytest_benchmarks.core.values import OptionError
from pytest_benchmarks.metrics.document import write_metrics
from pytest_benchmarks.metrics.outputs import output_path
from pytest_benchmarks.metrics.runs import (
    EXIT_INPUT,
    EXIT_UNJUDGEABLE,
    InputError,
    Unjudgeable,
    compare_runs,
    load,
    load_run,
    merge_documents,
    missing_shards,
    partial_shards,
)

#: The gate's options of ``compare`` and ``report``, by flag: the registry's settings (their
#: help, default and parser), as the pytest gate's --benchmark-alpha, -gate and -gate-power.
GATE_OPTIONS = {"--alpha": "alpha", "--gate": "gate", "--gate-power": "gate_power"}
_BY_FIELD = {o.field: o for o in OPTIONS}


def record_build(root: Path) -> int:
    """Build the dataset of a recording run; its parts stay where anything fails."""
    from pytest_benchmarks.core.files import parts_dir
    from pytest_benchmarks.engine.dataset import RecordError, build_dataset

    root = root.absolute()
    named = root.with_name(root.name.removesuffix(".parts"))
    if root.name.endswith(".parts") and not parts_dir(root).exists() and not named.exists():
        raise InputError(
            f"{root} is the recorded episodes' folder; give the dataset's directory: "
            f"pytest-benchmarks record-build {named}"
        )
    if not parts_dir(root).is_dir():
        raise InputError(f"{parts_dir(root)}: no recorded episodes there")
    try:
        summary = build_dataset(parts_dir(root), root)
    except RecordError as exc:
        raise InputError(str(exc)) from None
    print(f"LeRobotDataset at {root}: {summary.episodes} episodes, {summary.frames} frames")
    return 0


def slurm_run(args: argparse.Namespace) -> int:
    """``pytest-benchmarks slurm``: submit the array and its merge (``cluster.slurm``)."""
    pytest_args = tuple(a for i, a in enumerate(args.pytest_args) if i or a != "--")
    run = slurm.ArrayRun(
        args.shards, args.out.absolute(), pytest_args, args.retries,
        sbatch_args=tuple(args.sbatch_arg),
    )  # fmt: skip
    try:
        slurm.check(run)
        if args.dry_run:
            element, merge_script = slurm.write_scripts(run)
            print(f"{element}:\n{element.read_text()}\n{merge_script}:\n{merge_script.read_text()}")
            return 0
        array_id, merge_id = slurm.submit(run)
    except slurm.SlurmError as exc:
        raise InputError(str(exc)) from None
    print(
        f"submitted array job {array_id} ({run.shards} shards) and merge job {merge_id}: "
        f"{run.merged} once every shard has ended"
    )
    return 0


def plan(args: argparse.Namespace) -> int:
    """``pytest-benchmarks plan``: the table (or ``--json``'s rows) of ``metrics.plan``."""
    from pytest_benchmarks.metrics import plan as planning

    try:
        drops = planning.fractions(args.drop, "--drop")
        if args.snapshots is not None:
            groups = [list(planning.snapshot_rates(args.snapshots).values())]
        else:
            if args.tasks < 1:
                raise planning.PlanError(f"--tasks: {args.tasks}; a plan needs at least 1 task")
            groups = [[r] * args.tasks for r in planning.fractions(args.rate, "--rate")]
        pairings = [p.strip() for p in args.pairing.split(",") if p.strip()]
        rows = planning.run_plan(
            groups,
            args.episodes,
            drops,
            pairings,
            args.alpha,
            args.sessions,
            args.seed,
            per_task=args.snapshots is not None,
        )
    except planning.PlanError as exc:  # fmt: skip
        raise InputError(str(exc)) from None
    if args.json:
        print(planning.as_json(rows))
    else:
        print(planning.table(rows, len(groups[0]), args.episodes, args.alpha))
    return 0


def drift_run(args: argparse.Namespace) -> int:
    """``pytest-benchmarks drift``: each snapshot's initial states reset under the installed
    environment; exit 1 where states moved under the snapshot's own environment (the gate
    would refuse them), else 0."""
    from pytest_benchmarks.drift import DriftError, drift, summary

    try:
        found = drift(args.dir, set(args.env), args.batch_size)
    except DriftError as exc:
        raise InputError(str(exc)) from None
    for task in found:
        print(f"  {task.line()}")
    print(summary(found))
    return 1 if any(d.moved and not d.environment for d in found) else 0


#: What ``build_parser`` adds each command's parser to.
type Commands = argparse._SubParsersAction[argparse.ArgumentParser]


def build_parser() -> argparse.ArgumentParser:
    """The command line: every command and option with its help."""
    parser = argparse.ArgumentParser(prog="pytest-benchmarks", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        _merge_command,
        _compare_command,
        _report_command,
        _history_command,
        _slurm_command,
        _plan_command,
        _drift_command,
        _record_build_command,
    ):
        add(commands)  # in this order in --help
    return parser


def _merge_command(commands: Commands) -> None:
    """``merge``: the shards' metrics files in, one run out."""
    merge_cmd = commands.add_parser("merge", help="join shards' metrics into one run")
    merge_cmd.add_argument("inputs", nargs="+", type=Path, metavar="METRICS.json",
                           help="the shards' metrics files")  # fmt: skip
    merge_cmd.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.json",
                           help="where to write the merged run")  # fmt: skip


def _compare_command(commands: Commands) -> None:
    """``compare``: two runs and the gate's options."""
    compare_cmd = commands.add_parser(
        "compare", help="gate NEW against OLD; exit 1 on regression (metrics JSON or "
        "lerobot-eval's eval_info.json, in any mix)",
    )  # fmt: skip
    compare_cmd.add_argument("old", type=Path, metavar="OLD.json", help="the baseline run")
    compare_cmd.add_argument("new", type=Path, metavar="NEW.json", help="the run to judge")
    _gate_options(compare_cmd, *GATE_OPTIONS)


def _report_command(commands: Commands) -> None:
    """``report``: a run, its baseline and the gate's options, and where the table and chart go."""
    report_cmd = commands.add_parser("report", help="Markdown table, chart and HTML page of a run")
    report_cmd.add_argument("run", type=Path, metavar="RUN.json", help="the run to report")
    report_cmd.add_argument("--baseline", type=Path, metavar="OLD.json",
                            help="add the baseline and the gate's verdict per task")  # fmt: skip
    _gate_options(report_cmd, "--alpha", "--gate")
    report_cmd.add_argument("-o", "--output", type=Path, metavar="REPORT.md",
                            help="write the Markdown here (default: stdout)")  # fmt: skip
    report_cmd.add_argument("--png", type=Path, metavar="CHART.png",
                            help="also draw a chart (.png, .svg or .pdf)")  # fmt: skip
    report_cmd.add_argument("--html", type=Path, metavar="REPORT.html",
                            help="also write one self-contained page: the table, the gate, "
                            "the intervals drawn and the failing episodes' videos")  # fmt: skip
    report_cmd.add_argument("--video-budget", type=float, default=64.0, metavar="MB",
                            help="videos embedded in the --html page at most, in MB "
                            "(default 64); past it a video is named, not embedded")  # fmt: skip


def _history_command(commands: Commands) -> None:
    """``history``: runs in order, the gate's options, and where the table, page and chart go."""
    history_cmd = commands.add_parser(
        "history", help="success rates across runs, each step judged by the gate",
        description="pytest-benchmarks history RUN.json...: each task's success rate over the "
        "runs (checkpoints, commits) in the order they were recorded, each step between "
        "neighbours judged as compare judges it; runs the gate cannot compare shown apart",
    )  # fmt: skip
    history_cmd.add_argument("runs", nargs="+", type=Path, metavar="RUN.json",
                             help="metrics files or eval_info.json, in any mix")  # fmt: skip
    history_cmd.add_argument("--as-given", action="store_true",
                             help="keep the order given, not the recorded start times")  # fmt: skip
    _gate_options(history_cmd, "--alpha", "--gate")
    history_cmd.add_argument("-o", "--output", type=Path, metavar="HISTORY.md",
                             help="write the Markdown here (default: stdout)")  # fmt: skip
    history_cmd.add_argument("--html", type=Path, metavar="HISTORY.html",
                             help="also write one self-contained page")  # fmt: skip
    history_cmd.add_argument("--png", type=Path, metavar="HISTORY.png",
                             help="also draw a chart (.png, .svg or .pdf)")  # fmt: skip


def _slurm_command(commands: Commands) -> None:
    """``slurm``: the array's shards, output folder and retries, and the session's arguments."""
    slurm_cmd = commands.add_parser(
        "slurm", help="run a session as a Slurm array job of shards and a job that merges them",
        description="pytest-benchmarks slurm --shards N --out DIR -- PYTEST_ARGS: each array "
        "element runs one shard (--benchmark-shard=I/N) and carries it on from its journal when "
        "restarted; a job that depends on the array merges the shards into DIR/metrics.json",
    )  # fmt: skip
    slurm_cmd.add_argument("--shards", type=int, required=True, metavar="N",
                           help="array elements, one shard each")  # fmt: skip
    slurm_cmd.add_argument("--out", type=Path, required=True, metavar="DIR",
                           help="the shards' metrics, the merged run, logs and batch "
                           "scripts: a new directory, or this run's own to carry it "
                           "on")  # fmt: skip
    slurm_cmd.add_argument("--retries", type=int, default=2, metavar="R",
                           help="starts again within an element whose session ended unfinished "
                           "(default 2)")  # fmt: skip
    slurm_cmd.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                           help="an #SBATCH line for both jobs, e.g. --sbatch-arg=--gres=gpu:1 "
                           "(repeatable)")  # fmt: skip
    slurm_cmd.add_argument("--dry-run", action="store_true",
                           help="write the batch scripts and print them, submitting "
                           "nothing")  # fmt: skip
    slurm_cmd.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST_ARGS",
                           help="the session's arguments, after --")  # fmt: skip


def _plan_command(commands: Commands) -> None:
    """``plan``: the planned gate's tasks, rates, drops and pairings, and the simulation's."""
    plan_cmd = commands.add_parser(
        "plan", help="power, false alarms and episodes used of a planned gate, fixed and "
        "sequential side by side, by simulation with the gate's own code",
    )  # fmt: skip
    plan_cmd.add_argument("--tasks", type=int, default=10, metavar="N",
                          help="tasks per session (default 10)")  # fmt: skip
    plan_cmd.add_argument("--episodes", type=int, default=50, metavar="N",
                          help="episodes per task in the plan (default 50)")  # fmt: skip
    plan_cmd.add_argument("--rate", default="0.7,0.9", metavar="R[,R...]",
                          help="the tasks' baseline success rates, each a row group "
                          "(default 0.7,0.9)")  # fmt: skip
    plan_cmd.add_argument("--snapshots", type=Path, metavar="DIR",
                          help="instead of --rate and --tasks: one task per snapshot under DIR, "
                          "at its own rate")  # fmt: skip
    plan_cmd.add_argument("--drop", default="0,0.1,0.2,0.3,0.5", metavar="D[,D...]",
                          help="drops of one task's rate (default 0,0.1,0.2,0.3,0.5)")  # fmt: skip
    plan_cmd.add_argument("--pairing", default="replay,fresh", metavar="replay|fresh",
                          help="replay: the same episodes re-run; fresh: outcomes drawn anew "
                          "(default both)")  # fmt: skip
    plan_cmd.add_argument("--alpha", type=float, default=0.05, metavar="A",
                          help="the session's level (default 0.05)")  # fmt: skip
    plan_cmd.add_argument("--sessions", type=int, default=2000, metavar="N",
                          help="simulated sessions a cell, at least 100 "
                          "(default 2000)")  # fmt: skip
    plan_cmd.add_argument("--seed", type=int, default=0, help="the simulation's seed")
    plan_cmd.add_argument("--json", action="store_true",
                          help="print the rows as JSON: gate, pairing, rate, drop, false_alarms, "
                          "caught, episodes, sessions, mc_error")  # fmt: skip


def _drift_command(commands: Commands) -> None:
    """``drift``: the snapshots' folder and which of them to reset."""
    drift_cmd = commands.add_parser(
        "drift", help="reset every snapshot episode's initial state under the installed "
        "environment (no policy) and say per task how many moved, and what changed",
    )  # fmt: skip
    drift_cmd.add_argument("dir", type=Path, metavar="DIR",
                           help="a folder of snapshots, e.g. "
                           "benchmarks/__benchmark_snapshots__")  # fmt: skip
    drift_cmd.add_argument("--env", action="append", default=[], metavar="BENCHMARK",
                           help="only this benchmark's snapshots (repeatable)")  # fmt: skip
    drift_cmd.add_argument("--batch-size", type=int, default=None, metavar="N",
                           help="envs stepped at once per task (default: as a run)")  # fmt: skip


def _record_build_command(commands: Commands) -> None:
    """``record-build``: the recording run's directory."""
    build_cmd = commands.add_parser(
        "record-build", help="write the LeRobotDataset of a --benchmark-record run from DIR.parts"
    )
    build_cmd.add_argument("dir", type=Path, metavar="DIR", help="the --benchmark-record DIR")


def _gate_options(parser: argparse.ArgumentParser, *flags: str) -> None:
    """The gate's options as the registry declares them (``GATE_OPTIONS``)."""
    for flag in flags:
        option = _BY_FIELD[GATE_OPTIONS[flag]]
        parser.add_argument(flag, dest=option.field, default=option.default,
                            metavar=option.metavar, help=option.help)  # fmt: skip


def _read_gate_options(args: argparse.Namespace) -> None:
    """Each gate option given, read by the registry's parser (one line naming what is valid)."""
    for flag, field in GATE_OPTIONS.items():
        if hasattr(args, field):
            try:
                setattr(args, field, _BY_FIELD[field].parse(flag, getattr(args, field)))
            except OptionError as exc:
                raise InputError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "merge":
            output_path(args.output, args.inputs)
            shards = [(path, load(path)) for path in args.inputs]
            document = merge_documents(shards)
            write_metrics(args.output, document)
            print(
                f"merged {len(args.inputs)} files, {len(document['results'])} tasks: {args.output}"
            )
            missing = missing_shards(document)
            if missing:
                print(f"missing: shard {', '.join(missing)}; the merged run is partial")
            for change in document["run"].get("environment_changes", []):
                print(
                    f"environment: {change}; merged, and the run's fingerprint is "
                    f"{args.inputs[0]}'s (kept in run.environment_changes)"
                )
            unfinished = partial_shards(shards)
            if unfinished:
                print(
                    f"unfinished: {', '.join(unfinished)}; carry each on with its command and "
                    "--benchmark-resume"
                )
            return 0
        if args.command == "record-build":
            return record_build(args.dir)
        if args.command == "slurm":
            return slurm_run(args)
        if args.command == "plan":
            return plan(args)
        if args.command == "drift":
            return drift_run(args)
        _read_gate_options(args)
        if args.command in ("report", "history"):
            # The pages' templates and charts, loaded only by the commands that draw them.
            from pytest_benchmarks.metrics import reports

            return reports.report(args) if args.command == "report" else reports.history(args)
        (old, old_line), (new, new_line) = load_run(args.old), load_run(args.new)
        lines, status = compare_runs(old, new, args.alpha, args.gate, args.gate_power)
        print("\n".join([line for line in (old_line, new_line) if line] + lines))
        return status
    except InputError as exc:
        print(f"pytest-benchmarks: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Unjudgeable as exc:
        print(f"pytest-benchmarks: cannot compare: {exc}", file=sys.stderr)
        return EXIT_UNJUDGEABLE
    except OSError as exc:  # an output that could not be written after all (a full disk)
        target = exc.filename or getattr(args, "output", None) or getattr(args, "png", None)
        print(f"pytest-benchmarks: error: {target}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
