"""The per-episode journal: whatever ends a run (SIGKILL of a worker or of the whole session,
a hangup), every finished episode is kept and ``--benchmark-resume`` carries on from it.

The signals are sent when the policy says it has reached the chosen point (its ``reset`` writes
how many episodes it has started and its process id), never after a guessed sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from held import ARGS, EPISODES, HOLD, NOTING_POLICY, finish, held, rows, start
from helpers import read_metrics

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics import journal


def test_a_killed_xdist_worker_keeps_the_episodes_its_task_finished(toy_project: pytest.Pytester):
    metrics = toy_project.path / "run.json"
    session = start(toy_project, "-n", "2", f"--benchmark-metrics={metrics}", hold_at=HOLD)
    os.kill(held(toy_project, session), signal.SIGKILL)
    out = finish(session, toy_project)
    walk = rows(metrics)["toy/walk"]
    assert walk["error"].startswith("WorkerCrashed: xdist worker"), walk["error"]
    assert [e["index"] for e in walk["episodes"]] == [0, 1, 2], out
    assert rows(metrics)["toy/stroll"]["n_episodes"] == EPISODES
    # Carried on: only the five episodes walk lacks run, and the row is whole.
    (toy_project.path / "started-walk.txt").unlink()
    resumed = subprocess.run(
        [sys.executable, "-m", "pytest", *ARGS, f"--benchmark-metrics={metrics}",
         "--benchmark-resume"], cwd=toy_project.path, capture_output=True, text=True,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout
    assert len((toy_project.path / "started-walk.txt").read_text()) == EPISODES - 3
    walk = rows(metrics)["toy/walk"]
    assert walk["error"] is None and [e["index"] for e in walk["episodes"]] == list(range(8))
    assert not journal.folder_for(metrics).exists()  # a whole run needs no journal


def test_a_session_killed_outright_is_carried_on_from_its_journal(toy_project: pytest.Pytester):
    """SIGKILL of the whole session (-n 0) before any task ended: no metrics JSON, yet the
    resumed run runs only the missing episodes and equals an uninterrupted run."""
    metrics = toy_project.path / "run.json"
    session = start(toy_project, f"--benchmark-metrics={metrics}", hold_at=HOLD)
    held(toy_project, session)
    os.killpg(session.pid, signal.SIGKILL)
    finish(session, toy_project)
    assert not metrics.exists()
    found = journal.read(journal.folder_for(metrics))
    assert all(run["fingerprint"]["packages"] for run in found.runs.values())  # said on resume
    logged = found.results["toy/walk"]
    assert [e.index for e in logged.episodes] == [0, 1, 2]
    assert logged.error == journal.INTERRUPTED
    (toy_project.path / "started-walk.txt").unlink()
    resumed = toy_project.runpytest_subprocess(
        *ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume"
    )
    resumed.assert_outcomes(passed=4)
    assert len((toy_project.path / "started-walk.txt").read_text()) == EPISODES - 3
    clean = toy_project.path / "clean.json"
    toy_project.runpytest_subprocess(*ARGS, f"--benchmark-metrics={clean}").assert_outcomes(
        passed=4
    )
    outcome = [
        {k: v for k, v in e.items() if k != "duration_s"}
        for e in rows(metrics)["toy/walk"]["episodes"]
    ]
    expected = [
        {k: v for k, v in e.items() if k != "duration_s"}
        for e in rows(clean)["toy/walk"]["episodes"]
    ]
    assert outcome == expected


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_to_the_process_group_keeps_every_finished_episode(
    toy_project: pytest.Pytester, signum: signal.Signals
):
    """SIGHUP (a closed terminal) or SIGTERM (a CI runner) to the whole process group under
    -n 2: the session writes every finished episode and exits as interrupted. Each worker gets
    the signal twice (from the group and from its controller) and stops once, never killed by
    the second: xdist would otherwise replace it and the session run on."""
    metrics = toy_project.path / "run.json"
    session = start(toy_project, "-n", "2", f"--benchmark-metrics={metrics}", hold_at=HOLD)
    held(toy_project, session)
    os.killpg(session.pid, signum)
    (toy_project.path / "go").touch()  # the held policy returns into the stopping worker
    out = finish(session, toy_project)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    document = read_metrics(metrics)
    assert document["run"]["partial"] is True
    walk = rows(metrics)["toy/walk"]
    assert [e["index"] for e in walk["episodes"]][:3] == [0, 1, 2], walk
    assert walk["error"].startswith(f"Terminated: {signum.name}"), walk


def _result(episodes: int) -> TaskResult:
    task = TaskRef("toy", "toy", "walk", 0, "walk to the end")
    records = [EpisodeRecord(i, 1000 + i, i % 4, True, 6, 1.0, 1.0, 0.1) for i in range(episodes)]
    return TaskResult(task, episodes=records, planned=4, policy={"source": "module"})


def write_journal(folder: Path, episodes: int, end: bool) -> Path:
    writer = journal.JournalWriter(folder, {"seed": 1000})
    result = _result(episodes)
    writer.start(TaskResult(result.task, planned=4))
    for episode in result.episodes:
        writer.episode(result.task.id, episode, result.policy)
    if end:
        writer.end(result)
    writer.close()
    assert writer.path is not None
    return writer.path


def test_the_journal_reads_back_what_was_written(tmp_path: Path):
    write_journal(tmp_path / "j", 3, end=False)
    found = journal.read(tmp_path / "j")
    walk = found.results["toy/walk"]
    assert walk.episodes == _result(3).episodes and walk.error == journal.INTERRUPTED
    assert found.runs and found.notes == []
    write_journal(tmp_path / "k", 4, end=True)
    ended = journal.read(tmp_path / "k").results["toy/walk"]
    assert ended.error is None and not ended.partial and ended.policy == {"source": "module"}


def test_a_cut_last_line_is_dropped_with_a_note_and_other_damage_is_refused(tmp_path: Path):
    path = write_journal(tmp_path / "j", 3, end=False)
    whole = path.read_text()
    path.write_text(whole[:-25])  # the last episode's line cut short by a kill
    found = journal.read(tmp_path / "j")
    assert [e.index for e in found.results["toy/walk"].episodes] == [0, 1]
    assert found.notes == [f"journal: dropped {path}:5, a line cut short when the process "
                           "writing it ended"]  # fmt: skip
    lines = whole.splitlines(keepends=True)
    edited = json.loads(lines[2])
    edited["episode"]["success"] = False  # a flipped outcome, its checksum left as it was
    path.write_text("".join([*lines[:2], json.dumps(edited) + "\n", *lines[3:]]))
    with pytest.raises(journal.JournalError) as refused:
        journal.read(tmp_path / "j")
    assert str(refused.value) == (
        f"{path}:3: its checksum does not match its content (edited or damaged)"
    )
    path.write_text("".join([*lines[:2], "{not json\n", *lines[3:]]))
    with pytest.raises(journal.JournalError, match=r":3: not a journal line \(not JSON\)$"):
        journal.read(tmp_path / "j")


def test_what_is_no_journal_file_is_named_and_skipped_never_opened(tmp_path: Path):
    """A FIFO (opening it would block for ever), a folder and a stranger's file, each named
    ``*.jsonl``, are skipped with a line naming them; the real file is read."""
    folder = tmp_path / "j"
    write_journal(folder, 3, end=False)
    os.mkfifo(folder / "1-1.jsonl")
    (folder / "2-2.jsonl").mkdir()
    (folder / "notes.jsonl").write_text("{}\n")
    found = journal.read(folder)
    assert [e.index for e in found.results["toy/walk"].episodes] == [0, 1, 2]
    assert sorted(found.notes) == [
        f"journal: skipped {folder / '1-1.jsonl'}: not a regular file",
        f"journal: skipped {folder / '2-2.jsonl'}: not a regular file",
        f"journal: skipped {folder / 'notes.jsonl'}: not a journal file's name (PID-TIME.jsonl)",
    ]
    dropped = journal.discard(folder)  # only the journal file goes; the others are named
    assert dropped.episodes == 3
    assert [p.name for p in dropped.left] == ["1-1.jsonl", "2-2.jsonl", "notes.jsonl"]


def test_a_line_that_is_not_utf8_is_refused_naming_its_file_and_line(tmp_path: Path):
    path = write_journal(tmp_path / "j", 2, end=False)
    path.write_bytes(path.read_bytes() + b"\xff\xfe broken\n")
    with pytest.raises(journal.JournalError) as refused:
        journal.read(tmp_path / "j")
    assert str(refused.value) == f"{path}:5: not a journal line (not UTF-8 text)"


def test_a_journal_folder_that_is_a_link_is_unlinked_never_followed(tmp_path: Path):
    """Discarding a new run's journal that links to another run's: the link goes, the other
    run's files stay, and nothing is claimed removed."""
    other = tmp_path / "other.journal"
    kept = write_journal(other, 2, end=False)
    link = tmp_path / "run.json.journal"
    link.symlink_to(other)
    assert journal.discard(link) == journal.Discarded()
    assert not link.exists() and not link.is_symlink() and kept.exists()


def test_a_resumed_run_skips_a_fifo_in_its_journal_and_says_so(toy_project: pytest.Pytester):
    """--benchmark-resume once blocked for ever opening a FIFO named like a journal file."""
    metrics = toy_project.path / "run.json"
    folder = journal.folder_for(metrics)
    folder.mkdir()
    os.mkfifo(folder / "7-7.jsonl")
    toy_project.makepyfile(noting=NOTING_POLICY)
    result = toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"*journal: skipped {folder / '7-7.jsonl'}: not a regular file*"])


def _v1_lines(entries: list[dict]) -> str:
    """Lines as version 1 wrote them (compact JSON, each with its checksum)."""
    return "".join(
        json.dumps({**e, "sum": journal._checksum(e)}, separators=(",", ":")) + "\n"
        for e in entries
    )


def test_a_journal_of_the_earlier_line_format_is_read_as_the_same_events(tmp_path: Path):
    """Version 1 named its lines ``start``, ``episode`` and ``end``: a run interrupted before
    an upgrade is still carried on from it, as the events those lines were."""
    folder = tmp_path / "j"
    folder.mkdir()
    result = _result(3)
    head = {k: v for k, v in result.to_row().items() if k != "episodes"}
    entries: list[dict] = [
        {"event": "run", "version": 1, "pid": 1, "run": {"seed": 1000}},
        {"event": "start", "at": 1.0, "row": {**head, "n_episodes": 0}},
        *(
            {"event": "episode", "id": "toy/walk", "policy": result.policy, "episode": asdict(e)}
            for e in result.episodes[:2]
        ),
    ]
    path = folder / "1-1.jsonl"
    path.write_text(_v1_lines(entries))
    found = journal.read(folder)
    walk = found.results["toy/walk"]
    assert walk.episodes == result.episodes[:2] and walk.error == journal.INTERRUPTED
    assert walk.policy == {"source": "module"} and found.runs == {path: {"seed": 1000}}
    entries.append({"event": "end", "row": head})
    path.write_text(_v1_lines(entries))
    ended = journal.read(folder).results["toy/walk"]
    assert ended.error is None and ended.episodes == result.episodes[:2]
    assert journal.discard(folder).episodes == 2


def test_a_new_run_removes_only_the_journal_files_this_project_wrote(tmp_path: Path):
    """The user's own files beside the journal, a file named like a journal file that is none,
    a link and a folder are left and named; a file at the journal's path is refused."""
    folder = tmp_path / "run.json.journal"
    write_journal(folder, 3, end=False)
    (folder / "notes.txt").write_text("mine")
    (folder / "9-9.jsonl").write_text('{"not": "a header"}\n')
    (folder / "8-8.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (folder / "data").mkdir()
    (folder / "data" / "1-1.jsonl").write_text("kept")
    dropped = journal.discard(folder)
    assert dropped.episodes == 3
    assert sorted(p.name for p in dropped.left) == ["8-8.jsonl", "9-9.jsonl", "data", "notes.txt"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "8-8.jsonl",
        "9-9.jsonl",
        "data",
        "notes.txt",
    ]
    assert (folder / "data" / "1-1.jsonl").read_text() == "kept"
    line = dropped.line(folder)
    assert line is not None and "left 4 entries in" in line and "notes.txt" in line
    taken = tmp_path / "taken.json.journal"
    taken.write_text("the user's file")
    with pytest.raises(journal.JournalPathError, match="is a file, not a journal folder"):
        journal.discard(taken)
    assert taken.read_text() == "the user's file"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a filesystem needs root")
def test_a_filesystem_mounted_inside_the_journal_folder_is_never_crossed(tmp_path: Path):
    folder = tmp_path / "run.json.journal"
    write_journal(folder, 2, end=False)
    mount = folder / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(mount)], check=False).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        write_journal(mount, 2, end=False)  # a journal file, but on another filesystem
        (mount / "theirs.txt").write_text("theirs")
        dropped = journal.discard(folder)
        assert dropped.episodes == 2 and [p.name for p in dropped.left] == ["mnt"]
        assert (mount / "theirs.txt").read_text() == "theirs" and len(list(mount.iterdir())) == 2
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def _rewrite(path: Path, number: int, change) -> None:  # type: ignore[no-untyped-def]
    """Line ``number`` (1-based) of a journal file edited, its checksum recomputed."""
    lines = path.read_text().splitlines(keepends=True)
    entry = json.loads(lines[number - 1])
    entry.pop("sum")
    change(entry)
    lines[number - 1] = json.dumps({**entry, "sum": journal._checksum(entry)}) + "\n"
    path.write_text("".join(lines))


@pytest.mark.parametrize(
    ("number", "change", "said"),
    [
        (3, lambda e: e["episode"].update(sum_reward=float("nan")), "NaN is not a JSON number"),
        (3, lambda e: e["episode"].update(success="yes"), "success: 'yes' is not of type"),
        (1, lambda e: e.update(run="seed 1000"), "its header's run is not an object"),
        (
            3,
            lambda e: e["episode"].update(initial_digest="0123"),
            "initial_digest: '0123' does not match",
        ),
    ],
)
def test_a_journal_line_the_schema_refuses_is_refused_naming_its_file_and_line(
    tmp_path: Path,
    number: int,
    change,
    said: str,  # type: ignore[no-untyped-def]
):
    """Values a metrics JSON cannot hold (a NaN reward, a string outcome, a header whose run is
    no object, a digest of other than 12 hex digits) are refused where they are read, naming the file and line, whatever their
    checksum says: they would otherwise end the resumed run without its metrics."""
    path = write_journal(tmp_path / "j", 2, end=False)
    _rewrite(path, number, change)
    with pytest.raises(journal.JournalError) as refused:
        journal.read(tmp_path / "j")
    assert str(refused.value).startswith(str(path)) and said in str(refused.value)


def test_a_journal_a_newer_version_wrote_is_refused_naming_its_version(tmp_path: Path):
    """A newer version's lines may mean what this version's do not: its file is refused, not
    read as this version's, naming the file, its version and the versions this code reads."""
    path = write_journal(tmp_path / "j", 2, end=False)
    _rewrite(path, 1, lambda e: e.update(version=journal.VERSION + 1))
    with pytest.raises(journal.JournalError) as refused:
        journal.read(tmp_path / "j")
    assert str(refused.value) == (
        f"{path}:1: journal version {journal.VERSION + 1}; this pytest-benchmarks reads versions "
        f"1 to {journal.VERSION} (a newer version wrote it: carry the run on with that one)"
    )
    _rewrite(path, 1, lambda e: e.update(version="\x1b[2J3"))
    with pytest.raises(journal.JournalError, match=r":1: journal version \\x1b\[2J3; "):
        journal.read(tmp_path / "j")


OTHER = {"source": "hub", "id": "someone/else", "revision": "abc123"}


def test_an_episode_of_another_policy_is_refused_naming_its_file_and_line(tmp_path: Path):
    """One task's episodes are one policy's: an episode line naming another (a file of another
    run copied in, a line edited with its checksum recomputed) is refused, not merged in under
    the task's policy; so is a later file's start or end line that names another."""
    path = write_journal(tmp_path / "j", 3, end=True)
    _rewrite(path, 4, lambda e: e.update(policy=OTHER))
    with pytest.raises(journal.JournalError) as refused:
        journal.read(tmp_path / "j")
    assert str(refused.value) == (
        f"{path}:4: episode 1 of toy/walk names policy {OTHER}, its task's earlier lines "
        "{'source': 'module'}; one task's episodes are one policy's (edited, or another run's "
        "file)"
    )
    path.unlink()
    path = write_journal(tmp_path / "j", 3, end=True)
    _rewrite(path, 6, lambda e: e["row"].update(policy=OTHER))
    with pytest.raises(journal.JournalError, match=r":6: the end line of toy/walk names policy"):
        journal.read(tmp_path / "j")


def _killed(project: pytest.Pytester, metrics: Path) -> Path:
    """The journal a run killed after its episodes and before its metrics JSON leaves: its
    settings as the header, each task's start and episodes, no end line."""
    document = read_metrics(metrics)
    writer = journal.JournalWriter(journal.folder_for(metrics), document["run"])
    for row in document["results"]:
        result = TaskResult.from_row(row)
        writer.start(TaskResult(result.task, planned=result.planned))
        for episode in result.episodes[:5]:
            writer.episode(result.task.id, episode, result.policy)
    writer.close()
    metrics.unlink()
    assert writer.path is not None
    return writer.path


@pytest.mark.parametrize(
    ("number", "change", "said"),
    [
        (1, lambda e: e.update(version=journal.VERSION + 1), "1: journal version 3; "),
        (
            4,
            lambda e: e.update(policy=OTHER),
            "4: episode 1 of toy/stroll names policy {'source': ",
        ),
    ],
    ids=["newer-version", "other-policy"],
)
def test_resume_refuses_a_newer_journal_or_another_policy_and_a_run_still_writes(
    toy_project: pytest.Pytester,
    number: int,
    change,
    said: str,  # type: ignore[no-untyped-def]
):
    """--benchmark-resume refuses in one line naming the file and line; a new run at the same
    path (which discards the old journal) still runs and writes its metrics."""
    metrics = toy_project.path / "run.json"
    toy_project.makepyfile(noting=NOTING_POLICY)
    toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}").assert_outcomes(passed=4)
    path = _killed(toy_project, metrics)
    _rewrite(path, number, change)
    refused = toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines([f"ERROR: --benchmark-resume: journal {path}:{said}*"])
    assert not metrics.exists()
    toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}").assert_outcomes(passed=4)
    assert set(rows(metrics)) == {"toy/walk", "toy/stroll"}


def test_resume_warns_when_the_run_was_made_in_another_environment(toy_project: pytest.Pytester):
    """Carrying a run on under another simulator (``mujoco 3.3.0 → 3.4.0``) mixes episodes
    of two environments in one row: not refused (the user may mean it), but said in the
    session's header, naming the file, whether the metrics JSON or a journal file."""
    metrics = toy_project.path / "run.json"
    toy_project.makepyfile(noting=NOTING_POLICY)
    toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}").assert_outcomes(passed=4)
    document = read_metrics(metrics)
    numpy = document["run"]["fingerprint"]["packages"]["numpy"]
    document["run"]["fingerprint"]["packages"]["numpy"] = "0.9"
    metrics.write_text(json.dumps(document))
    resumed = toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume")
    resumed.assert_outcomes(passed=4)
    resumed.stdout.fnmatch_lines([
        f"resume: warning: {metrics} was made in another environment (numpy 0.9 → {numpy}); its "
        "episodes are kept and the rest run in this one",
    ])  # fmt: skip
    path = _killed(toy_project, metrics)
    _rewrite(path, 1, lambda e: e["run"]["fingerprint"]["packages"].update(numpy="0.9"))
    resumed = toy_project.runpytest(*ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume")
    resumed.assert_outcomes(passed=4)
    resumed.stdout.fnmatch_lines([f"resume: warning: {path} was made in another environment *"])
    assert (
        "resume: warning"
        not in toy_project.runpytest(
            *ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume"
        ).stdout.str()
    )
