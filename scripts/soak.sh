#!/usr/bin/env bash
# The slow checks, kept out of the main suite: the tests marked `slow`
# (50 SIGTERM cycles, 50 restarts x 500 mails, ...) and the SIGKILL soak.
# Usage: bash scripts/soak.sh [KILLS]   (default 100 kills)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_synapse.sh  # the Matrix tests' homeserver (tests/synapse_server.py)
.venv/bin/python -m pytest -m slow -q
.venv/bin/python -m tests.soak --kills "${1:-100}"
