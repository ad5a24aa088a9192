#!/usr/bin/env bash
# Install the Matrix homeserver the Matrix tests run against (tests/synapse_server.py) into its own
# venv, .venv-synapse: Synapse pins many libraries, and they must never fight the project's own.
# Idempotent: a venv whose synapse already imports at the pinned version is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
SYNAPSE_VERSION="1.163.2"
VENV=.venv-synapse
if [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import sys, importlib.metadata as m, synapse
sys.exit(m.version('matrix-synapse') != '$SYNAPSE_VERSION')" 2>/dev/null; then
    exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "matrix-synapse==$SYNAPSE_VERSION"
