#!/usr/bin/env bash
# Sets up (infra/setup.sh) and serves every Momor route on http://127.0.0.1:8080 with local
# emulators, the example catalog and the bundled fake provider. Flags go to infra/local.py
# (--catalog FILE, --port N, --api-key KEY, --keys FILE, --no-fake-providers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh
# File URLs (and a Vertex token endpoint) may reach only public addresses unless listed here
# (README "What Momor fetches"): the local file servers and the fake provider listen on 127.0.0.1.
export MOMOR_FETCH_ALLOW="${MOMOR_FETCH_ALLOW-127.0.0.1}"
exec .venv/bin/python -m infra.local "$@"
