#!/usr/bin/env bash
# Sets up (infra/setup.sh) and runs every test: unit, integration (fake providers over HTTP,
# DynamoDB Local and moto_server started by the tests themselves), Lambda (SAM CLI, the bundled
# Runtime Interface Emulator, the streaming bridge) and lint. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh
export PATH="$PWD/.sam-venv/bin:$PATH"
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
