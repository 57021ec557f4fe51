"""The install paths a user takes: beside an existing LeRobot 0.6 (the README's one command, in
a fresh Python 3.12 venv that holds LeRobot first), and the install script's choice of Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_readme import readme_commands

ROOT = Path(__file__).resolve().parents[1]
#: What a LeRobot user has installed before adding the plugin.
LEROBOT = "lerobot[smolvla,pi]==0.6.1"
KEPT = ("lerobot", "torch", "transformers", "huggingface-hub")


def versions(python: Path) -> dict[str, str]:
    """Each installed distribution's version, by normalised name."""
    done = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    pairs = (line.split("==", 1) for line in done.stdout.splitlines() if "==" in line)
    return {name.lower().replace("_", "-"): version for name, version in pairs}


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=1500, check=False,
    )  # fmt: skip


@pytest.mark.skipif(sys.version_info < (3, 12), reason="LeRobot 0.6 needs Python 3.12")
@pytest.mark.e2e
@pytest.mark.long
def test_the_plugin_installs_beside_lerobot_0_6_without_touching_it(tmp_path: Path):
    """LeRobot 0.6.1 first, as its users have it, then the README's command: LeRobot, torch,
    transformers and huggingface_hub keep their versions and ``pip check`` is clean."""
    (command,) = readme_commands("pip install -e")
    venv = tmp_path / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        python = venv / "bin" / "python"
        done = pip(python, "install", "--quiet", LEROBOT)
        assert done.returncode == 0, done.stderr[-3000:]
        before = versions(python)
        done = pip(python, *command[1:])
        assert done.returncode == 0, done.stderr[-3000:]
        after = versions(python)
        print({name: before[name] for name in KEPT})
        assert {name: after[name] for name in KEPT} == {name: before[name] for name in KEPT}
        assert "pytest-benchmarks" in after and "metaworld" in after
        check = pip(python, "check")
        assert check.returncode == 0, check.stdout
        # The plugin loads in that environment, LeRobot policies included.
        done = subprocess.run(
            [str(python), "-c", "import pytest_benchmarks.policies.lerobot, lerobot.policies"],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    finally:  # several GB (LeRobot's torch): gone before the tests after it run
        shutil.rmtree(venv, ignore_errors=True)


def install_script(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``scripts/install.sh`` with a PATH of its shell tools only, and ``env`` on top."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VENV")}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "install.sh"), "test"],
        env={**clean, "VENV": str(tmp_path / "venv"), **env},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_install_script_refuses_a_python_older_than_3_12(tmp_path: Path):
    old = tmp_path / "python3.11"
    old.write_text("#!/bin/sh\nexit 1\n")  # what a Python 3.11 answers the version check
    old.chmod(0o755)
    done = install_script(tmp_path, PYTHON=str(old))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"install: PYTHON={old} is not Python 3.12 or newer; point PYTHON at a python3.12"
    )
    assert not (tmp_path / "venv").exists()
    # Nothing new enough anywhere: no python3.12, no pyenv, a python3 that is too old.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "sh"):
        found = subprocess.run(["which", tool], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            (bin_dir / tool).symlink_to(found.stdout.strip())
    (bin_dir / "python3").symlink_to(old)
    done = install_script(tmp_path, PATH=str(bin_dir), MUJOCO_GL="egl")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "install: no Python 3.12 or newer (tried PYTHON, python3.12, pyenv, python3); install "
        "python3.12 or set PYTHON"
    )
