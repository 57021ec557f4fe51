#!/usr/bin/env bash
# Install pytest-benchmarks and the given extras (default: every extra but `all`) into a virtual
# environment (default: .venv), and the CPU renderer MuJoCo needs when no GPU is present and
# FFmpeg's libraries (as root, through apt-get). CI and the benchmark images (docker/) call this
# same script. torch and torchvision, when an extra needs them, are the tested set in
# constraints/torch.txt.
#
# Environment: VENV (where the venv goes), PYTHON (the interpreter that creates it; else
# python3.12 on the PATH, else a 3.12 that pyenv provides, else python3 if it is 3.12 or newer),
# MUJOCO_GL=egl (a GPU renderer is in place: skip the CPU renderer).
#
# Last, the bytecode caches are written once, as pip writes them for what it installs, even where
# PYTHONDONTWRITEBYTECODE is set: this project's modules, and pytest's assertion-rewritten
# plugin modules (hydra-core's, anyio's, syrupy's, this plugin's), which every pytest process,
# each xdist worker included, would otherwise rewrite and compile again at start-up.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-metaworld,libero,aloha,pusht,policies,lerobot,so101,video,ray,test,lint,docs}"
# The interpreter: Python 3.12 or newer (LeRobot 0.6 needs it).
is_new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
find_python() {
  if [ -n "${PYTHON:-}" ]; then
    is_new_enough "$PYTHON" && { echo "$PYTHON"; return; }
    echo "install: PYTHON=$PYTHON is not Python 3.12 or newer; point PYTHON at a python3.12" >&2
    return 1
  fi
  is_new_enough python3.12 && { echo python3.12; return; }
  if command -v pyenv >/dev/null; then
    local version
    for version in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.1[2-9]\.[0-9]+$'); do
      is_new_enough "$(pyenv root)/versions/$version/bin/python3" \
        && { echo "$(pyenv root)/versions/$version/bin/python3"; return; }
    done
  fi
  is_new_enough python3 && { echo python3; return; }
  echo "install: no Python 3.12 or newer (tried PYTHON, python3.12, pyenv, python3); install python3.12 or set PYTHON" >&2
  return 1
}
python="$(find_python)" || exit 2
# System libraries, as root through apt-get: the CPU renderer (libOSMesa) unless a GPU renders,
# and FFmpeg's libraries, which torchcodec (LeRobot's video decoder) loads.
packages=()
if [ "${MUJOCO_GL:-}" != egl ] && ! ldconfig -p 2>/dev/null | grep -q libOSMesa; then
  packages+=(libosmesa6)
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libavutil\.so\.'; then
  packages+=(ffmpeg)
fi
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  else
    echo "note: missing system libraries; rendered observations and LeRobot's video decoding need: apt-get install ${packages[*]}" >&2
  fi
fi
venv="${VENV:-.venv}"
"$python" -m venv "$venv"
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
