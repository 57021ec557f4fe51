#!/usr/bin/env bash
# Install pytest-benchmarks and the given extras (default: metaworld,test) into a virtual
# environment (default: .venv). CI and the benchmark images call this same script.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-metaworld,test}"
venv="${VENV:-.venv}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e ".[${extras}]"
echo "installed pytest-benchmarks[${extras}] into ${venv}"
