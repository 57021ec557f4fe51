"""Runs as metrics files: read and checked against the schema, shards merged into one run, and
two runs compared by the regression gate's statistics; ``lerobot-eval``'s ``eval_info.json``
is read as a run too (``eval_info``), for ``compare`` and ``report``. ``pytest-benchmarks``
(``cli``) prints what these return; errors are one line (``InputError``, ``Unjudgeable``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import comparability
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.metrics import eval_info, gate
from pytest_benchmarks.metrics.document import build_metrics, load_results, schema

#: Exit statuses: 1 a regression (or, with --gate-power=fail, a gate that cannot fail), 2 bad
#: input, 3 runs that cannot be judged (a task errored or ran no episode, or no task in common).
EXIT_REGRESSION, EXIT_INPUT, EXIT_UNJUDGEABLE = 1, 2, 3


class InputError(Exception):
    """A metrics file that cannot be used; the message is the one line shown."""


class Unjudgeable(Exception):
    """Two runs the gate cannot judge at all (they share no task)."""


def load(path: Path) -> dict[str, Any]:
    """A metrics document, checked against the shipped JSON Schema."""
    import jsonschema

    document: dict[str, Any] = _parse(path)
    if eval_info.is_eval_info(document):
        raise InputError(
            f"{path}: lerobot-eval's eval_info.json, not a pytest-benchmarks metrics file; "
            "compare and report read it, merge and resume do not"
        )
    try:
        jsonschema.validate(document, schema())
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise InputError(f"{path}: not a pytest-benchmarks metrics file ({where}: "
                         f"{exc.message.splitlines()[0][:120]})") from None  # fmt: skip
    return document


def load_run(path: Path) -> tuple[dict[str, Any], str | None]:
    """A run to compare or report: a metrics document, or ``lerobot-eval``'s ``eval_info.json``
    as one (its run block says ``source: lerobot-eval``), with a line that says how that file
    was read (None for a metrics file)."""
    document = _parse(path)
    if not eval_info.is_eval_info(document):
        return load(path), None
    try:
        results, line = eval_info.read(document, path)
    except eval_info.EvalInfoError as exc:
        raise InputError(str(exc)) from None
    return build_metrics(results, {"source": eval_info.SOURCE}, eval_info.SOURCE), line


def _parse(path: Path) -> Any:
    """A file's JSON, each way it can fail said in one line."""
    if path.exists() and not path.is_file():  # a FIFO would block the read for ever
        raise InputError(f"{path}: not a regular file")
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text (a binary file?)") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply to be a metrics file") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise InputError(f"{path}: not usable JSON ({str(exc).splitlines()[0][:120]})") from None


def merge(paths: Sequence[Path]) -> dict[str, Any]:
    """One metrics document from shards of the same run."""
    return merge_documents([(path, load(path)) for path in paths])


def merge_documents(documents: Sequence[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """``merge`` of shards already loaded: (path, document) each."""
    first_path, first = documents[0]
    owner: dict[str, Path] = {}
    results: list[TaskResult] = []
    check_shards(documents)
    loaded = [load_results(document) for _, document in documents]
    for (path, document), shard in zip(documents, loaded, strict=True):
        # Shards of one run share every setting with a bearing on outcomes (the benchmark's
        # own step limit is that value named, where it is one value for the shards' tasks).
        tasks = [r.task for r in (*loaded[0], *shard)]
        differ = comparability.differences(
            *comparability.effective(first["run"], document["run"], tasks)
        )
        if differ:
            raise InputError(
                f"{path}: {', '.join(d.text() for d in differ)} from {first_path}; shards of "
                "one run share every setting an outcome depends on"
            )
        for result in shard:
            if result.task.id in owner:
                raise InputError(
                    f"{path}: task {result.task.id} is also in {owner[result.task.id]}; "
                    "shards must not overlap"
                )
            owner[result.task.id] = path
            results.append(result)
    runs = [document["run"] for _, document in documents]
    missing = _absent(runs)
    environments = environment_changes(documents)
    run = {
        **first["run"],
        "args": [arg for r in runs for arg in r["args"]],
        "workers": sum(r["workers"] for r in runs),
        "started_at": min(r["started_at"] for r in runs),
        "finished_at": max(r["finished_at"] for r in runs),
        "duration_s": max(r["duration_s"] for r in runs),
        "partial": any(r["partial"] for r in runs) or bool(missing),
        "exitstatus": max((r["exitstatus"] or 0) for r in runs),
        "shards": [str(path) for path, _ in documents],
        "missing_shards": missing,
        "shard": None,  # the merged document is the whole run
        **({"environment_changes": environments} if environments else {}),
    }
    return build_metrics(results, run, first["policy"]["spec"])


def environment_changes(documents: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """``b.json: mujoco 3.3.0 → 3.4.0 from a.json`` for each shard whose environment's
    fingerprint differs from the first shard's. Merged, not refused: shards on machines with
    other GPUs or images are one run; but the merged run's ``fingerprint`` is the first
    shard's, so what differs is kept in the run (``environment_changes``) and said."""
    first_path, first = documents[0]
    before = first["run"].get("fingerprint") or {}
    found = []
    for path, document in documents[1:]:
        changes = gate.environment_changes(before, document["run"].get("fingerprint") or {})
        if changes:
            found.append(f"{path}: {', '.join(changes)} from {first_path}")
    return found


def _absent(runs: Sequence[dict[str, Any]]) -> list[str]:
    """The shards (``I/N``) of a sharded run that none of ``runs`` is."""
    cuts = [r["shard"] for r in runs if r.get("shard")]
    if not cuts:
        return []
    count = cuts[0][1]
    return [f"{i}/{count}" for i in range(1, count + 1) if i not in {c[0] for c in cuts}]


def partial_shards(documents: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """``PATH (shard I/N)`` for each of a run's loaded files whose own run did not finish."""
    found = []
    for path, document in documents:
        run = document["run"]
        if run["partial"]:
            cut = run.get("shard")
            found.append(f"{path}" + (f" (shard {cut[0]}/{cut[1]})" if cut else ""))
    return found


def missing_shards(document: dict[str, Any]) -> list[str]:
    """The shards a merged document lacks (from the shards it lists and their cut)."""
    return list(document["run"].get("missing_shards") or [])


def check_shards(documents: Sequence[tuple[Path, dict[str, Any]]]) -> None:
    """Shards of one run: all cut with one count (``--benchmark-shard=I/N``), each I once."""
    cuts = [(path, document["run"].get("shard")) for path, document in documents]
    sharded = [(path, cut) for path, cut in cuts if cut]
    if not sharded:
        return
    first_path, first = sharded[0]
    named = f"{first_path} is shard {first[0]}/{first[1]}"
    seen: dict[int, Path] = {}
    for path, cut in cuts:
        if not cut:
            raise InputError(f"{path}: not a shard, but {named}")
        if cut[1] != first[1]:
            raise InputError(
                f"{path}: shard {cut[0]}/{cut[1]}, but {named}; shards of one run are cut with "
                "one count"
            )
        if cut[0] in seen:
            raise InputError(f"{path}: shard {cut[0]}/{cut[1]} is also {seen[cut[0]]}")
        seen[cut[0]] = path


#: How ``compare`` names its two runs in a refusal.
RUN_NAMES = ("the old run", "the new run")


def unusable(result: TaskResult, run: str) -> str | None:
    """Why a task of a run cannot be compared: it errored, or has no episodes."""
    if result.error:
        return f"the {run} run's task failed: {result.error}"
    if not result.n_episodes:
        return f"the {run} run has no episodes of it"
    return None


@dataclass
class Judgement:
    """Two runs judged by the gate (``judge_runs``): what ``compare`` prints and ``report``
    tabulates, by one road."""

    verdicts: dict[str, gate.Comparison]
    #: Tasks in both runs the gate could not compare, and why.
    problems: dict[str, str]
    #: ``note: ...`` lines: settings that differ without bearing on outcomes, the environment.
    notes: list[str]
    only_old: list[str]
    only_new: list[str]
    alpha: float
    mode: str
    #: A sequential run's planned episodes per task; 0 for a fixed run.
    planned: int

    def lines(self, power: str = "warn") -> list[str]:
        """The gate's lines, as the pytest gate's summary prints them, ending in its count."""
        verdicts = list(self.verdicts.values())
        lines = [*self.notes, *gate.verdict_lines(verdicts)]
        lines += [
            f"  {'unjudged':<10} {t}: cannot compare: {why}" for t, why in self.problems.items()
        ]
        lines += [f"{task_id}: only in the old run" for task_id in self.only_old]
        lines += [f"{task_id}: only in the new run" for task_id in self.only_new]
        closing = gate.closing_line(
            verdicts, self.alpha, self.mode, power, len(self.problems), planned=self.planned
        )
        return [*lines, closing]

    def status(self, power: str = "warn") -> int:
        """The exit status: EXIT_REGRESSION when the gate fails (a regression, or, with
        ``power="fail"``, a task whose test cannot detect any drop at these episode counts);
        EXIT_UNJUDGEABLE where a task could not be compared; 0 otherwise."""
        verdicts = self.verdicts.values()
        if any(v.regression for v in verdicts):
            return EXIT_REGRESSION
        if self.problems:
            return EXIT_UNJUDGEABLE
        return EXIT_REGRESSION if any(gate.fails(v, power) for v in verdicts) else 0


def compare_runs(
    old: dict[str, Any], new: dict[str, Any], alpha: float, mode: str, power: str = "warn"
) -> tuple[list[str], int]:
    """The gate's lines (``metrics.gate``, as the pytest gate prints them) and the exit status
    (``Judgement.status``)."""
    judgement = judge_runs(old, new, alpha, mode)
    return judgement.lines(power), judgement.status(power)


def judge_runs(old: dict[str, Any], new: dict[str, Any], alpha: float, mode: str) -> Judgement:
    """Two runs judged as the pytest gate judges a session: settings that bear on outcomes
    refused (``Unjudgeable``), each task paired (``gate.pair``: moved initial states under
    another environment judged unpaired), tested, and the family's verdicts; a sequential run
    as its stopping rule did."""
    noted: list[str] = []
    name = task_name(old, new)
    before = {name(r): r for r in load_results(old)}
    after = {name(r): r for r in load_results(new)}
    if eval_info.SOURCE not in (old["run"].get("source"), new["run"].get("source")):
        noted = _settings_notes(old, new, [after[t].task for t in set(before) & set(after)])
    common = sorted(set(before) & set(after))
    if not common:
        raise Unjudgeable(
            f"the runs share no task (old: {len(before)} tasks, new: {len(after)}); nothing to gate"
        )
    fingerprints = [document["run"].get("fingerprint") or {} for document in (old, new)]
    pairings: dict[str, gate.Pairing] = {}
    problems: dict[str, str] = {}
    for t in common:
        why = unusable(after[t], "new") or unusable(before[t], "old")
        if why is None:
            try:
                pairings[t] = gate.pair(
                    gate.Side(before[t].episodes, fingerprint=fingerprints[0]),
                    gate.Side(after[t].episodes, fingerprint=fingerprints[1]),
                    RUN_NAMES, "", per_task=False,
                )  # fmt: skip
            except gate.Incomparable as exc:
                why = str(exc)
        if why is not None:
            problems[t] = why
    judged = [t for t in common if t not in problems]
    order = sequential_order(new)
    try:
        pairs = {t: (before[t].episodes, after[t].episodes) for t in judged}
        verdicts = gate.judge(pairs, alpha, mode, order, pairings)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return Judgement(
        verdicts, problems, noted, sorted(set(before) - set(after)),
        sorted(set(after) - set(before)), alpha, mode, len(order),
    )  # fmt: skip


def _settings_notes(old: dict[str, Any], new: dict[str, Any], shared: list[Any]) -> list[str]:
    """The runs' settings held against each other (``Unjudgeable`` where one bears on
    outcomes); a note for each other difference and for another environment."""
    old_run, new_run = comparability.effective(old["run"], new["run"], shared)
    try:
        changes = gate.check_comparable(
            old_run, new_run, RUN_NAMES, "run the new one with the old one's settings",
        )  # fmt: skip
    except gate.Incomparable as exc:
        raise Unjudgeable(str(exc)) from None
    noted = [f"note: the runs differ in {change}" for change in changes]
    moved = gate.environment_changes(
        old["run"].get("fingerprint") or {}, new["run"].get("fingerprint") or {}
    )
    if moved:
        noted.append(f"note: the runs ran in another environment ({', '.join(moved)})")
    return noted


def sequential_order(document: dict[str, Any]) -> tuple[int, ...]:
    """A ``--benchmark-sequential`` run's plan (its episode indices in order), which ``compare``
    judges as the run's stopping rule did; () for a fixed run."""
    run = document["run"]
    if not run.get("sequential"):
        return ()
    return tuple(run.get("episode_indices") or range(int(run.get("episodes") or 0)))


def task_name(*documents: dict[str, Any]) -> Callable[[TaskResult], str]:
    """How two runs' tasks are matched: by id, or, where either is ``lerobot-eval``'s, by the
    name LeRobot gives it (``TASK_GROUP/TASK_ID``, as ``lerobot:TYPE`` and LIBERO name theirs)."""
    if any(d["run"].get("source") == eval_info.SOURCE for d in documents):
        return lambda result: result.task.name
    return lambda result: result.task.id
