"""Build a benchmark's Docker image offline and run its smoke job in a container, as CI's job does.

The benchmark workflow (.github/workflows/benchmark_tests.yml) builds each image from a CUDA base
and PyPI; a machine that reaches neither can still prove the images: Docker's daemon from
Debian's packages, a Debian 13 base made with debootstrap (its Python 3.13 satisfies the
project's 3.12 floor; Debian 12's 3.11 does not), and the image's Python packages from a wheel
folder built here with a Python 3.13 from the project's own requirements. The workflow's own
"Smoke run" and "Report" steps are then run as written, and the metrics JSON the container wrote
to the mounted folder is checked.

    python scripts/docker_smoke.py [BENCHMARK ...] [--host] [--out DIR]

Exit status: 0 when every image built and its smoke job passed, or when Docker cannot be had here
(the line says why: the step is skipped); 1 when a base, a wheel folder, an image or a smoke job
failed (one line each, naming its log where there is one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from pytest_benchmarks.metrics import runs

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github/workflows/benchmark_tests.yml"
BASE = "local/debian:trixie"
SUITE = "trixie"
MIRROR = "http://deb.debian.org/debian"
PYTHON = "python3.13"
WHEELS = Path("build/docker-wheels")
OUT = ROOT / "build/docker-smoke"
DAEMON_WAIT_S = 60.0


class Skip(Exception):
    """Docker cannot be had on this machine: the step is skipped, not failed."""


class Failed(Exception):
    """A base, wheel folder, image or smoke job failed; the message is the one line to show."""


@dataclass(frozen=True)
class SmokeJob:
    """The workflow's smoke job for one benchmark: its matrix entry and its two steps' scripts."""

    entry: dict[str, str]
    smoke: str
    report: str


@dataclass
class Figures:
    """What one benchmark's check measured, written to build/docker-smoke/BENCHMARK.json."""

    benchmark: str
    base_s: float | None = None
    wheels: int = 0
    wheels_mb: float = 0.0
    wheels_s: float = 0.0
    build_s: float = 0.0
    image_mb: float = 0.0
    smoke_s: float = 0.0
    report_s: float = 0.0
    host_smoke_s: float | None = None
    tasks: int = 0
    episodes: int = 0
    successes: int = 0


def say(line: str) -> None:
    print(f"docker smoke: {line}", flush=True)


def run(
    args: list[str], log: Path | None = None, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """Run a command; with a log, its output goes there (appended) and not to the terminal."""
    if log is None:
        return subprocess.run(args, text=True, capture_output=True, check=False, **kwargs)  # type: ignore[call-overload]
    with log.open("a") as sink:
        sink.write(f"$ {shlex.join(args)}\n")
        sink.flush()
        return subprocess.run(
            args, text=True, stdout=sink, stderr=subprocess.STDOUT, check=False, **kwargs
        )  # type: ignore[call-overload]


def last_line(log: Path) -> str:
    """The log's last line that reads like an error, else its last line."""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    for line in reversed(lines):
        if re.search(r"error|failed|not found|unable|denied|no such|cannot", line, re.IGNORECASE):
            return line[:300]
    return lines[-1][:300] if lines else "(no output)"


def failure(what: str, log: Path) -> Failed:
    """A failure's one line: what failed, the log's telling line, and where the log is."""
    return Failed(f"{what}: {last_line(log)} (log: {log})")


def as_root() -> bool:
    return os.geteuid() == 0


def apt_install(packages: list[str], log: Path) -> bool:
    """Install Debian packages when this process may (root, apt-get present)."""
    if not (as_root() and shutil.which("apt-get")):
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if run(["apt-get", "update", "-q"], log, env=env).returncode != 0:
        return False
    return run(["apt-get", "install", "-y", "-q", *packages], log, env=env).returncode == 0


def daemon_up() -> bool:
    return shutil.which("docker") is not None and run(["docker", "info"]).returncode == 0


def ensure_daemon(log: Path) -> None:
    """Use the running Docker daemon, or install (Debian's docker.io) and start one."""
    if daemon_up():
        return
    if shutil.which("dockerd") is None:
        if not as_root():
            raise Skip("no Docker daemon is running, and installing one (docker.io) needs root")
        if shutil.which("apt-get") is None:
            raise Skip(
                "no Docker daemon is running, and this machine has no apt-get to install docker.io"
            )
        say("installing Docker from Debian's packages (docker.io)")
        if not apt_install(["docker.io"], log) or shutil.which("dockerd") is None:
            raise Skip(f"no Docker daemon, and apt-get install docker.io failed: {last_line(log)}")
    if not as_root():
        raise Skip("no Docker daemon is running, and starting dockerd needs root")
    say("starting dockerd")
    with log.open("a") as sink:
        subprocess.Popen(["dockerd"], stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + DAEMON_WAIT_S
    while time.monotonic() < deadline:
        if daemon_up():
            return
        time.sleep(1.0)
    raise Skip(
        f"dockerd did not answer within {DAEMON_WAIT_S:.0f} s: {last_line(log)} (log: {log})"
    )


def ensure_base(log: Path) -> float | None:
    """The local Debian 13 base image: Docker Hub's where the Hub is reachable, else made once
    with debootstrap; the seconds it took when made now."""
    if run(["docker", "image", "inspect", BASE]).returncode == 0:
        say(f"base {BASE}: present")
        return None
    started = time.monotonic()
    if run(["docker", "pull", f"debian:{SUITE}"], log).returncode == 0:
        say(f"base {BASE}: pulled debian:{SUITE}")
        tagged = run(["docker", "tag", f"debian:{SUITE}", BASE], log)
        if tagged.returncode != 0:
            raise failure(f"the base {BASE} cannot be made: docker tag failed", log)
        return time.monotonic() - started
    if shutil.which("debootstrap") is None and not apt_install(["debootstrap"], log):
        raise Failed(
            f"the base {BASE} cannot be made: no debootstrap (installing it needs root, apt-get)"
        )
    if not as_root():
        raise Failed(f"the base {BASE} cannot be made: debootstrap needs root")
    say(f"making the base {BASE} with debootstrap ({SUITE}, {MIRROR})")
    with tempfile.TemporaryDirectory(prefix="debootstrap-") as root:
        made = run(["debootstrap", "--variant=minbase", SUITE, root, MIRROR], log)
        if made.returncode != 0:
            raise failure(f"the base {BASE} cannot be made: debootstrap failed", log)
        with log.open("a") as sink:
            tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
            imported = subprocess.run(
                ["docker", "import", "-", BASE],
                stdin=tar.stdout,
                stdout=sink,
                stderr=subprocess.STDOUT,
                check=False,
            )
            tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise failure(f"the base {BASE} cannot be made: docker import failed", log)
    return time.monotonic() - started


def image_python() -> str:
    """A Python of the image's version here, to build its wheels (DOCKER_SMOKE_PYTHON wins)."""
    named = os.environ.get("DOCKER_SMOKE_PYTHON")
    candidates = [named] if named else [shutil.which(PYTHON)]
    if not named and shutil.which("pyenv"):
        root = run(["pyenv", "root"]).stdout.strip()
        candidates += sorted(
            str(p) for p in Path(root).glob(f"versions/{PYTHON[6:]}.*/bin/{PYTHON}")
        )
    for candidate in filter(None, candidates):
        version = run(
            [candidate, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"]
        )
        if version.returncode == 0 and version.stdout.strip() == PYTHON[6:]:
            return candidate
    raise Failed(
        f"no {PYTHON} here to build the image's wheels (tried {named or 'PATH and pyenv'}); "
        "install one or set DOCKER_SMOKE_PYTHON"
    )


def extras_of(benchmark: str) -> str:
    """The extras the image installs, as its Dockerfile passes them to scripts/install.sh."""
    dockerfile = dockerfile_of(benchmark).read_text()
    found = re.search(r"scripts/install\.sh\s+([\w,-]+)", dockerfile)
    if found is None:
        raise Failed(f"{dockerfile_of(benchmark)} does not call scripts/install.sh with its extras")
    return found.group(1)


def dockerfile_of(benchmark: str) -> Path:
    return ROOT / f"docker/Dockerfile.benchmark.{benchmark}"


def build_wheels(benchmark: str, figures: Figures, log: Path) -> Path:
    """Every wheel the image's install needs, its build backend and pip included."""
    python = image_python()
    folder = WHEELS / benchmark
    shutil.rmtree(ROOT / WHEELS, ignore_errors=True)  # all of it is in the build context
    extras = extras_of(benchmark)
    say(f"building the {benchmark} image's wheels with {python} (.[{extras}])")
    started = time.monotonic()
    args = [
        python,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--wheel-dir",
        str(folder),
        "--constraint",
        "constraints/torch.txt",
    ]
    built = run([*args, f".[{extras}]", "setuptools>=77", "pip"], log, cwd=ROOT)
    if built.returncode != 0:
        sources = re.findall(r"Failed building wheel for (\S+)", log.read_text(errors="replace"))
        if sources:
            raise Failed(
                f"the {benchmark} image's wheels could not be built: {', '.join(sources)} "
                f"{'has' if len(sources) == 1 else 'have'} no {PYTHON} wheel on the index, and "
                f"the source does not build here (log: {log})"
            )
        raise failure(f"the {benchmark} image's wheels could not be built", log)
    wheels = list((ROOT / folder).glob("*.whl"))
    figures.wheels, figures.wheels_s = len(wheels), time.monotonic() - started
    figures.wheels_mb = sum(w.stat().st_size for w in wheels) / 2**20
    return folder


def build_image(benchmark: str, wheels: Path, figures: Figures, log: Path) -> str:
    """The workflow's build, on the local base, rendering with OSMesa, from the wheel folder."""
    tag = f"pytest-benchmarks-{benchmark}"
    say(f"building the image {tag} (log: {log})")
    started = time.monotonic()
    args = ["docker", "build", "-f", str(dockerfile_of(benchmark)), "-t", tag]
    for name, value in (
        ("BASE", BASE),
        ("PYTHON", PYTHON),
        ("MUJOCO_GL", "osmesa"),
        ("WHEELS", str(wheels)),
    ):
        args += ["--build-arg", f"{name}={value}"]
    if run([*args, "."], log, cwd=ROOT).returncode != 0:
        raise failure(f"the image {tag} did not build", log)
    figures.build_s = time.monotonic() - started
    size = run(["docker", "image", "inspect", "--format", "{{.Size}}", tag]).stdout.strip()
    figures.image_mb = int(size) / 2**20 if size.isdigit() else 0.0
    return tag


def smoke_job(benchmark: str) -> SmokeJob:
    """The workflow's smoke job: its matrix entry for the benchmark and its steps."""
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    matrix = jobs["smoke"]["strategy"]["matrix"]["include"]
    entry = next((e for e in matrix if e["benchmark"] == benchmark), None)
    if entry is None:
        names = ", ".join(e["benchmark"] for e in matrix)
        raise Failed(f"{WORKFLOW.name} has no smoke job for {benchmark!r} (it has: {names})")
    steps = {step.get("name"): step.get("run") for step in jobs["smoke"]["steps"]}
    return SmokeJob(entry, steps["Smoke run (one episode per task)"], steps["Report"])


def run_step(script: str, env: dict[str, str], cwd: Path, log: Path) -> tuple[int, float]:
    """A workflow step's `run:` script, with bash -e as GitHub Actions runs it."""
    started = time.monotonic()
    rc = run(
        ["bash", "-e", "-o", "pipefail", "-c", script], log, cwd=cwd, env={**os.environ, **env}
    ).returncode
    return rc, time.monotonic() - started


def check_results(benchmark: str, results: Path, figures: Figures) -> None:
    """The metrics JSON the container wrote: every task ran its episodes, JUnit saw no failure."""
    metrics = results / "metrics.json"
    if not metrics.is_file():
        raise Failed(f"the {benchmark} smoke job wrote no {metrics}")
    try:
        data = runs.load(metrics)
    except runs.InputError as exc:
        raise Failed(str(exc)) from None
    rows = data["results"]
    envs = sorted({row["env"] for row in rows})
    if envs != [benchmark]:
        raise Failed(f"{metrics}: expected {benchmark}'s tasks, found {len(rows)} tasks of {envs}")
    empty = [row["id"] for row in rows if row["n_episodes"] < 1]
    if empty:
        raise Failed(f"{metrics}: tasks with no finished episode: {', '.join(empty[:5])}")
    if data["overall"]["n_errors"]:
        raise Failed(f"{metrics}: {data['overall']['n_errors']} tasks ended with an error")
    figures.tasks = len(rows)
    figures.episodes = sum(row["n_episodes"] for row in rows)
    figures.successes = sum(row["successes"] for row in rows)
    suite = ET.parse(results / "junit.xml").getroot()
    suites = [suite] if suite.tag == "testsuite" else list(suite)
    bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    if bad:
        raise Failed(f"{results / 'junit.xml'}: {bad} failed or erroneous tests")


def host_smoke(job: SmokeJob, cwd: Path, log: Path) -> float:
    """The same pytest command on this machine's .venv, for the time beside the container's."""
    entry = job.entry
    pytest = ROOT / ".venv/bin/pytest"
    args = [
        str(pytest),
        entry["tests"],
        f"--benchmark-env={entry['benchmark']}",
        *shlex.split(entry["args"]),
        "-n",
        "2",
    ]
    args += [f"--benchmark-metrics={cwd / 'host-metrics.json'}", "-p", "no:cacheprovider"]
    started = time.monotonic()
    if run(args, log, cwd=ROOT).returncode != 0:
        raise failure(f"the {entry['benchmark']} smoke job failed on this machine", log)
    return time.monotonic() - started


def check(benchmark: str, host: bool, out_root: Path) -> Figures:
    """One benchmark: base, wheels, image, the workflow's smoke and report steps, the results."""
    out = out_root / benchmark
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    figures = Figures(benchmark)
    job = smoke_job(benchmark)
    figures.base_s = ensure_base(out / "base.log")
    wheels = build_wheels(benchmark, figures, out / "wheels.log")
    try:
        build_image(benchmark, wheels, figures, out / "build.log")
    finally:
        shutil.rmtree(ROOT / wheels, ignore_errors=True)
    entry = job.entry
    env = {
        "BENCHMARK": benchmark,
        "TESTS": entry["tests"],
        "ARGS": entry["args"],
        "GITHUB_STEP_SUMMARY": str(out / "summary.md"),
    }
    say(f"running the workflow's smoke job in a container: {entry['tests']} {entry['args']}")
    rc, figures.smoke_s = run_step(job.smoke, env, out, out / "smoke.log")
    if rc != 0:
        raise failure(
            f"the {benchmark} smoke job failed in its container (exit {rc})", out / "smoke.log"
        )
    rc, figures.report_s = run_step(job.report, env, out, out / "report.log")
    if rc != 0 or not (out / "summary.md").read_text().strip():
        raise failure(f"the {benchmark} report step failed in its container", out / "report.log")
    check_results(benchmark, out / "results", figures)
    if host:
        figures.host_smoke_s = host_smoke(job, out, out / "host.log")
    (out_root / f"{benchmark}.json").write_text(json.dumps(asdict(figures), indent=2) + "\n")
    return figures


def summary(f: Figures) -> str:
    base = "present" if f.base_s is None else f"made in {f.base_s:.0f} s"
    host = "" if f.host_smoke_s is None else f" (on this machine: {f.host_smoke_s:.1f} s)"
    return (
        f"{f.benchmark}: base {base}; "
        f"{f.wheels} wheels ({f.wheels_mb:.0f} MB) in {f.wheels_s:.0f} s; "
        f"image built in {f.build_s:.0f} s, {f.image_mb:.0f} MB; "
        f"smoke job {f.smoke_s:.1f} s in the container{host}, "
        f"{f.tasks} tasks, {f.successes}/{f.episodes} episodes succeeded; report {f.report_s:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "benchmarks",
        nargs="*",
        default=["metaworld"],
        help="images to build and smoke-test (default: metaworld)",
    )
    parser.add_argument(
        "--host", action="store_true", help="also time the same smoke job on this machine's .venv"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=OUT,
        help="where logs, results and figures go (build/docker-smoke)",
    )
    args = parser.parse_args(argv)
    images = sorted(p.suffix[1:] for p in (ROOT / "docker").glob("Dockerfile.benchmark.*"))
    unknown = [name for name in args.benchmarks if name not in images]
    if unknown:
        say(f"failed: no image for {', '.join(unknown)}; images: {', '.join(images)}")
        return 1
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = "a file is in the way" if isinstance(exc, FileExistsError) else exc.strerror
        say(f"failed: --out {args.out}: cannot make the folder ({reason}); give a folder")
        return 1
    try:
        ensure_daemon(args.out / "daemon.log")
    except Skip as skipped:
        say(f"skipped: {skipped}")
        return 0
    try:
        for benchmark in args.benchmarks:
            say(summary(check(benchmark, args.host, args.out)))
    except Failed as failed:
        say(f"failed: {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
