"""A single-node Slurm cluster of its own, to try ``pytest-benchmarks slurm`` on one machine
and to test it: munged, slurmctld and slurmd on free ports with a private config, state and
socket (``SLURM_CONF`` points the client commands at it), stopped afterwards; nothing of the
machine's own Slurm or munge is touched. Needs root and Debian's ``slurm-wlm`` and ``munge``;
``unavailable`` says why a cluster cannot start here."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")

CONFIG = """\
ClusterName=local
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=2000
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def unavailable() -> str | None:
    """Why no cluster can start here, or None."""
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed (Debian: apt install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their users only when started as root"
    if not Path("/etc/munge/munge.key").is_file():
        return "/etc/munge/munge.key is missing (Debian's munge package makes it)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def cluster(root: Path) -> Iterator[dict[str, str]]:
    """A running cluster; the environment its client commands need. Its daemons' logs are in
    ``root`` (said in the error when the node never comes up)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "state").mkdir(exist_ok=True)
    (root / "spool").mkdir(exist_ok=True)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    conf = root / "slurm.conf"
    conf.write_text(CONFIG.format(
        host=socket.gethostname().split(".")[0], root=root, cpus=os.cpu_count() or 1,
        memory=int(memory * 0.8), ctld_port=free_port(), d_port=free_port(),
    ))  # fmt: skip
    env = {**os.environ, "SLURM_CONF": str(conf)}
    munge = ["munged", "--force", f"--socket={root}/munge.sock", f"--pid-file={root}/munged.pid",
             f"--log-file={root}/munged.log", f"--seed-file={root}/munged.seed"]  # fmt: skip
    subprocess.run(munge, check=True, env=env)
    try:
        subprocess.run(["slurmctld", "-f", str(conf)], check=True, env=env)
        subprocess.run(["slurmd", "-f", str(conf)], check=True, env=env)
        _wait_idle(env, root)
        yield {"SLURM_CONF": str(conf)}
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True)  # any left
        subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True)
        for name in ("slurmd", "slurmctld"):
            _stop(root / f"{name}.pid")
        subprocess.run(["munged", "-s", f"--socket={root}/munge.sock"], capture_output=True)


def _wait_idle(env: dict[str, str], root: Path) -> None:
    """Until the node takes jobs (a minute at most: a daemon that never comes up)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                               text=True).stdout.strip()  # fmt: skip
        if state in ("idle", "mix", "alloc"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the Slurm node never came up (state {state!r}); logs in {root}")


def _stop(pid_file: Path) -> None:
    """End a daemon that ``scontrol shutdown`` left running."""
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)


def wait_empty(env: dict[str, str], limit_s: float = 600) -> None:
    """Until the cluster's queue is empty: every job, a merge that submitted itself again
    included, has ended (``limit_s``: a hang guard, not a measure)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h"], env=env, capture_output=True,
                                text=True).stdout.strip()  # fmt: skip
        if not queued:
            return
        time.sleep(0.2)
    raise RuntimeError(f"jobs still queued after {limit_s:.0f} s: {queued}")


def start_again_soon(job: str, env: dict[str, str], limit_s: float = 120) -> None:
    """A requeued job waits two minutes before it may start again (its begin time); once it
    waits for that, let it start in two seconds. Not at once: slurmd refuses to launch a job
    whose credential is not newer than the one it revoked when it killed the job, and
    credentials keep whole seconds ("Job N already killed, do not launch batch job")."""
    deadline = time.monotonic() + limit_s
    state = ""
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T %r"], env=env,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
        if state == "PENDING BeginTime":
            subprocess.run(["scontrol", "update", f"jobid={job}", "StartTime=now+2"], env=env,
                           check=True)  # fmt: skip
            return
        time.sleep(0.05)
    raise RuntimeError(f"job {job} never waited to start again (last {state!r})")
