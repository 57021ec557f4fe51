"""``scripts/docker_smoke.py``: the images' build inputs agree with the workflow, and each way the
step can fail or be skipped is one line. The whole path (daemon, base, wheels, image, the
workflow's smoke job in a container) is `.ci/run`'s own step before the tests."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts/docker_smoke.py"
IMAGES = sorted(p.suffix[1:] for p in (ROOT / "docker").glob("Dockerfile.benchmark.*"))


@pytest.fixture(scope="module")
def smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docker_smoke", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("image", IMAGES)
def test_every_image_has_the_workflows_smoke_job_and_installs_its_own_extra(
    smoke: ModuleType, image: str
) -> None:
    job = smoke.smoke_job(image)
    assert job.entry["tests"] == f"benchmarks/test_{image}.py"
    assert "docker run" in job.smoke and "pytest-benchmarks report" in job.report
    extras = smoke.extras_of(image).split(",")
    assert image in extras and "test" in extras
    dockerfile = smoke.dockerfile_of(image).read_text()
    for argument in ("ARG BASE=nvidia/cuda", "ARG PYTHON=", "ARG MUJOCO_GL=egl", 'ARG WHEELS=""'):
        assert argument in dockerfile, (image, argument)


def test_an_unknown_image_is_one_line_naming_the_images() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "metaworld", "mw"], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert one_line(done) == f"docker smoke: failed: no image for mw; images: {', '.join(IMAGES)}"


def test_an_out_folder_that_cannot_be_made_is_one_line(smoke: ModuleType, tmp_path: Path, capsys):
    """An existing file, or a path under one: one line naming --out, no traceback."""
    (tmp_path / "file").write_text("")
    for out, reason in [("file", "a file is in the way"), ("file/sub", "Not a directory")]:
        assert smoke.main(["metaworld", "--out", str(tmp_path / out)]) == 1
        assert capsys.readouterr().out.strip().splitlines() == [
            f"docker smoke: failed: --out {tmp_path / out}: cannot make the folder ({reason}); "
            "give a folder"
        ]


def test_without_root_and_without_a_daemon_it_can_reach_the_step_is_skipped(
    smoke: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No daemon at DOCKER_HOST, and a uid other than root's (the only thing mocked: this
    machine's Python is root's alone, so another user cannot run it)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setattr(smoke.os, "geteuid", lambda: 1000)
    assert smoke.main(["--out", str(tmp_path / "out")]) == 0
    line = one_line(subprocess.CompletedProcess([], 0, *capsys.readouterr()))
    assert line.startswith("docker smoke: skipped: no Docker daemon is running, and "), line
    assert line.endswith("needs root")


def test_a_base_that_cannot_be_made_is_one_line(
    smoke: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(smoke, "BASE", "local/no-such-base:test")
    monkeypatch.setattr(smoke, "SUITE", "no-such-suite")
    with pytest.raises(smoke.Failed) as failed:
        smoke.ensure_base(tmp_path / "base.log")
    message = str(failed.value)
    assert message.startswith("the base local/no-such-base:test cannot be made: ")
    assert "\n" not in message


def test_an_image_that_does_not_build_is_one_line_naming_its_log(
    smoke: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not smoke.daemon_up():
        pytest.skip("needs a Docker daemon (.ci/run's docker step starts one)")
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker/Dockerfile.benchmark.broken").write_text("FROM scratch\nRUN false\n")
    monkeypatch.setattr(smoke, "ROOT", tmp_path)
    log = tmp_path / "build.log"
    with pytest.raises(smoke.Failed) as failed:
        smoke.build_image("broken", Path("wheels"), smoke.Figures("broken"), log)
    message = str(failed.value)
    assert message.startswith("the image pytest-benchmarks-broken did not build: ")
    assert message.endswith(f"(log: {log})") and "\n" not in message
