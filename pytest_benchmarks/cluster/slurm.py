"""Slurm array jobs: one pytest session per array element, each a shard of the run, and a job
that merges them once every element has ended.

Each element runs ``pytest ARGS --benchmark-shard=I/N --benchmark-metrics=OUT/shard-I-of-N.json
--benchmark-resume``: a first start finds nothing to resume and runs the shard, and a start after
the element was killed or requeued (``scontrol requeue``, a node that went down under
``--requeue``) carries the shard on from its journal, so no finished episode runs again. An
element whose session ended without finishing (killed, crashed: any status but 0, 1 (the gate
failed), 4 (bad input) and 5 (nothing selected)) is started again within the element, up to
``retries`` times. The merge job (``--dependency=afterany``) runs ``pytest-benchmarks merge``
over the shards' files that exist and names any shard still missing or partial; while an
element is queued again (requeued), it submits itself again behind the array instead. An
``OUT`` that holds another run's shards (other pytest arguments, another count) is refused:
its old shards would stand as the new run's result (``check_out``).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: pytest exit statuses after which a shard is done: passed, tests failed (the gate's verdict),
#: usage error (running it again cannot help), no tests collected.
DONE_STATUSES = (0, 1, 4, 5)

#: Options each element sets itself.
OWN_OPTIONS = ("--benchmark-shard", "--benchmark-metrics", "--benchmark-resume")


class SlurmError(ValueError):
    """A submission that cannot be made; the message is the one line shown."""


@dataclass(frozen=True)
class ArrayRun:
    """One run as a Slurm array: where its files go and how each element runs."""

    shards: int
    out: Path
    pytest_args: tuple[str, ...]
    retries: int = 2
    python: str = sys.executable
    workdir: Path = field(default_factory=Path.cwd)
    sbatch_args: tuple[str, ...] = ()

    def shard_path(self, index: int | str) -> Path:
        return self.out / f"shard-{index}-of-{self.shards}.json"

    @property
    def merged(self) -> Path:
        return self.out / "metrics.json"

    def element_script(self) -> str:
        """The array job's batch script: one shard per element, started again from its journal
        while its session ends unfinished."""
        args = " ".join(shlex.quote(a) for a in self.pytest_args)
        done = "|".join(str(s) for s in DONE_STATUSES)
        return "\n".join([
            "#!/bin/bash",
            "#SBATCH --job-name=pytest-benchmarks",
            f"#SBATCH --array=1-{self.shards}",
            "#SBATCH --requeue",
            "#SBATCH --open-mode=append",
            f"#SBATCH --output={self.out / 'logs' / 'shard-%a.out'}",
            *(f"#SBATCH {a}" for a in self.sbatch_args),
            f"cd {shlex.quote(str(self.workdir))} || exit 2",
            "i=$SLURM_ARRAY_TASK_ID",
            f"out={shlex.quote(str(self.out))}",
            "status=0",
            f"for attempt in $(seq 1 {self.retries + 1}); do",
            f"  {shlex.quote(self.python)} -m pytest {args} --benchmark-shard=$i/{self.shards} "
            f'--benchmark-metrics="$out/shard-$i-of-{self.shards}.json" --benchmark-resume',
            "  status=$?",
            f"  case $status in {done}) break ;; esac",
            f'  echo "shard $i/{self.shards}: pytest ended with status $status (attempt '
            '$attempt); carrying it on from its journal" >&2',
            "done",
            "exit $status",
            "",
        ])  # fmt: skip

    def merge_script(self) -> str:
        """The merge job's batch script (its argument: the array's job id): the shards' files
        that exist, merged; the others named by ``merge`` as missing. An element requeued after
        the array's first end (its node went) satisfies ``afterany`` early, so while any element
        is still queued the job submits itself again behind the array and ends."""
        pattern = shlex.quote(str(self.out)) + f"/shard-*-of-{self.shards}.json"
        again = f"--dependency=afterany:$array {shlex.quote(str(self.out / 'merge.sbatch'))}"
        return "\n".join([
            "#!/bin/bash",
            "#SBATCH --job-name=pytest-benchmarks-merge",
            "#SBATCH --open-mode=append",
            f"#SBATCH --output={self.out / 'logs' / 'merge.out'}",
            *(f"#SBATCH {a}" for a in self.sbatch_args),
            f"cd {shlex.quote(str(self.workdir))} || exit 2",
            "array=${1:-}",
            'if [ -n "$array" ] && [ -n "$(squeue -h -j "$array" -o %i 2>/dev/null)" ]; then',
            '  echo "array job $array has elements queued again; the merge waits for them"',
            f'  exec sbatch --parsable {again} "$array"',
            "fi",
            "shopt -s nullglob",
            f"found=({pattern})",
            'if [ ${#found[@]} = 0 ]; then',
            f'  echo "no shard wrote its metrics: see {self.out / "logs"}" >&2; exit 2',
            "fi",
            f"exec {shlex.quote(self.python)} -m pytest_benchmarks.cli merge \"${{found[@]}}\" "
            f"-o {shlex.quote(str(self.merged))}",
            "",
        ])  # fmt: skip


#: The most shards an array gets: Slurm's default MaxArraySize (1001) allows indices to 1000.
MAX_SHARDS = 1000


def check(run: ArrayRun) -> None:
    """Refuse what cannot be submitted, one line each, before anything is."""
    if run.shards < 1:
        raise SlurmError(f"--shards: {run.shards} is not a count of shards; give 1 or more")
    if run.shards > MAX_SHARDS:
        raise SlurmError(
            f"--shards: {run.shards} is more than a Slurm array holds by default "
            f"(MaxArraySize 1001: indices up to {MAX_SHARDS}); give {MAX_SHARDS} or fewer"
        )
    for arg in run.sbatch_args:
        if "\n" in arg or "\r" in arg:
            raise SlurmError(f"--sbatch-arg: {arg!r} holds a line break; give one option per flag")
    if run.retries < 0:
        raise SlurmError(f"--retries: {run.retries} is negative; give 0 or more")
    for arg in run.pytest_args:
        if arg.split("=", 1)[0] in OWN_OPTIONS:
            raise SlurmError(
                f"{arg}: each array element sets {', '.join(OWN_OPTIONS)} itself; leave it out"
            )
    check_out(run)


#: What a submission records under OUT: what its shards' files hang on, for the next one.
SUBMISSION = "submission.json"


def _shard_files(out: Path) -> list[Path]:
    """An earlier run's shards under ``out``: their metrics files and journals."""
    found = [*out.glob("shard-*-of-*.json"), *out.glob("shard-*-of-*.json.journal")]
    return sorted(found)


def check_out(run: ArrayRun) -> None:
    """``OUT`` holds no shards of another run. Each element carries its shard file on with
    --benchmark-resume and the merge takes the files it finds, so shards of other pytest
    arguments or another shard count would stand as this run's result; the same command
    again carries its own run on."""
    shards = _shard_files(run.out) if run.out.is_dir() else []
    if not shards:
        return
    ours = f"-of-{run.shards}.json"
    others = [p.name for p in shards if ours not in p.name]
    if others:
        raise SlurmError(
            f"--out {run.out}: holds the shards of a run with other --shards ({others[0]}); this "
            f"one has {run.shards}: give another --out, or remove that run's shard-* files"
        )
    recorded = run.out / SUBMISSION
    if not recorded.is_file():
        return  # written before submissions were recorded: nothing to compare with
    try:
        before = json.loads(recorded.read_text())
    except (OSError, ValueError):
        before = {}
    now = _submission(run)
    for key, name in (("pytest_args", "pytest arguments"), ("workdir", "working directory")):
        if before.get(key) != now[key]:
            raise SlurmError(
                f"--out {run.out}: holds the shards of a run with other {name} "
                f"({_shown(before.get(key))} → {_shown(now[key])}); give another --out, or "
                "remove its shard-* files to start over"
            )


def _submission(run: ArrayRun) -> dict[str, Any]:
    return {"shards": run.shards, "pytest_args": list(run.pytest_args),
            "workdir": str(run.workdir)}  # fmt: skip


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return shlex.join(value) or "none"
    return str(value)


def sbatch() -> str:
    """The ``sbatch`` command's path; SlurmError where Slurm's client commands are missing."""
    found = shutil.which("sbatch")
    if found is None:
        raise SlurmError(
            "sbatch not found on PATH: Slurm's client commands are needed to submit (Debian: "
            "apt install slurm-client); --dry-run writes the batch scripts without them"
        )
    return found


def write_scripts(run: ArrayRun) -> tuple[Path, Path]:
    """The two batch scripts, written under ``OUT`` (kept beside the run's files)."""
    (run.out / "logs").mkdir(parents=True, exist_ok=True)
    element, merge = run.out / "shards.sbatch", run.out / "merge.sbatch"
    element.write_text(run.element_script())
    merge.write_text(run.merge_script())
    (run.out / SUBMISSION).write_text(json.dumps(_submission(run), indent=1) + "\n")
    return element, merge


def submit(run: ArrayRun) -> tuple[str, str]:
    """Submit the array and its merge; their job ids."""
    command = sbatch()
    element, merge = write_scripts(run)
    array_id = _sbatch(command, [str(element)])
    merge_id = _sbatch(command, [f"--dependency=afterany:{array_id}", str(merge), array_id])
    return array_id, merge_id


def _sbatch(command: str, args: Sequence[str]) -> str:
    done = subprocess.run([command, "--parsable", *args], capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()
        script = next(a for a in args if a.endswith(".sbatch"))
        raise SlurmError(f"sbatch refused {script}: {why[-1] if why else done.returncode}")
    return done.stdout.strip().split(";")[0]
