#!/usr/bin/env bash
# Install pytest-benchmarks and the given extras (default: every extra but `all`) into a virtual
# environment (default: .venv), and the CPU renderer MuJoCo needs when no GPU is present (as root,
# through apt-get). CI and the benchmark images (docker/) call this same script. torch and
# torchvision, when an extra needs them, are the tested set in constraints/torch.txt.
#
# Environment: VENV (where the venv goes), PYTHON (the interpreter that creates it, default
# python3), MUJOCO_GL=egl (a GPU renderer is in place: skip the CPU renderer).
#
# Last, the bytecode caches are written once, as pip writes them for what it installs, even where
# PYTHONDONTWRITEBYTECODE is set: this project's modules, and pytest's assertion-rewritten
# plugin modules (hydra-core's, anyio's, syrupy's, this plugin's), which every pytest process,
# each xdist worker included, would otherwise rewrite and compile again at start-up.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-metaworld,libero,aloha,pusht,policies,lerobot,video,test,lint,docs}"
if [ "${MUJOCO_GL:-}" != egl ] && ! ldconfig -p 2>/dev/null | grep -q libOSMesa; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq libosmesa6 >/dev/null
  else
    echo "note: libOSMesa is missing; rendered observations need: apt-get install libosmesa6" >&2
  fi
fi
venv="${VENV:-.venv}"
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -c constraints/torch.txt -e ".[${extras}]"
env -u PYTHONDONTWRITEBYTECODE "$venv/bin/python" -m compileall -q pytest_benchmarks benchmarks tests
# Starting pytest once writes the plugins' caches; a warm-up only (an extra's benchmark missing
# from this install fails its collection), so its outcome is not the install's. Without this
# project's addopts, which turn some plugins off: every installed plugin is loaded, as in the
# pytest runs the tests start in directories of their own.
env -u PYTHONDONTWRITEBYTECODE "$venv/bin/python" -m pytest --collect-only -q -p no:cacheprovider \
  -o addopts= benchmarks >/dev/null 2>&1 || true
echo "installed pytest-benchmarks[${extras}] into ${venv}"
