#!/usr/bin/env bash
# Install the third-party MCP servers the MCP tests run (tests/test_mcp_third_party.py):
# the PyPI ones into their own venv, .venv-mcp (they pin their own SDK, which must never
# fight the project's), the npm ones from tests/mcp_npm's lock file.
# Idempotent: what is already installed at the pinned versions is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
PYPI_SERVERS=("mcp-server-time==2026.10.19" "mcp-server-git==2026.10.19" "mcp-server-fetch==2026.10.24")
VENV=.venv-mcp
installed() {
    local spec name version
    for spec in "${PYPI_SERVERS[@]}"; do
        name=${spec%%==*} version=${spec##*==}
        "$VENV/bin/python" -c "import sys, importlib.metadata as m
sys.exit(m.version('$name') != '$version')" 2>/dev/null || return 1
    done
}
if ! { [ -x "$VENV/bin/python" ] && installed; }; then
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet "${PYPI_SERVERS[@]}"
fi
# npm ci wipes and reinstalls node_modules: only when the lock file is newer than the install.
NPM=tests/mcp_npm
if [ ! -f "$NPM/node_modules/.package-lock.json" ] ||
    [ "$NPM/package-lock.json" -nt "$NPM/node_modules/.package-lock.json" ]; then
    (cd "$NPM" && npm ci --silent --no-audit --no-fund)
fi
