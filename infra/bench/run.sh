#!/usr/bin/env bash
# Run the whole benchmark: makes LiteLLM's venv on first use (never touching .venv), then
# `python -m infra.bench` with Momor's venv. Arguments pass through (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_VENV=infra/bench/.venv-litellm
LITELLM_VERSION="${LITELLM_VERSION:-1.108.7}"
if [ ! -x "$BENCH_VENV/bin/litellm" ]; then
  # The same interpreter as Momor's venv, so both routers run on the same Python.
  BASE="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
  "$BASE" -m venv "$BENCH_VENV"
  "$BENCH_VENV/bin/pip" install -q --upgrade pip
  "$BENCH_VENV/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION" matplotlib
fi
exec .venv/bin/python -m infra.bench "$@"
