#!/usr/bin/env bash
# Install everything into .venv and run the whole gate: lint, types, tests.
# This is the README's test command and what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages tests need: systemd-analyze checks deploy/*.service.
command -v systemd-analyze >/dev/null || (apt-get update -qq && apt-get install -y -qq systemd)
# Chromium and its driver: the web page's tests run it headless (no browser download).
command -v chromium >/dev/null && command -v chromedriver >/dev/null \
  || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)
# bubblewrap: the shell sandbox's tests run commands in it (tests/test_sandbox.py).
command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap)
# Dovecot: the IMAP watcher's tests run a real one of their own (tests/dovecot_server.py).
command -v dovecot >/dev/null && test -x /usr/lib/dovecot/imap \
  || (apt-get update -qq && apt-get install -y -qq dovecot-imapd)
# Prosody: the XMPP channel's tests run one of their own, unprivileged, on a free loopback
# port with its own config and data (tests/prosody_server.py).
command -v prosody >/dev/null && command -v prosodyctl >/dev/null \
  || (apt-get update -qq && apt-get install -y -qq prosody)
# ngircd: the IRC tests run a real one of their own (tests/ngircd_server.py).
test -x /usr/sbin/ngircd || (apt-get update -qq && apt-get install -y -qq ngircd)
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# Each layer imports only those below it (pyproject.toml [tool.importlinter]).
.venv/bin/lint-imports
# The Matrix tests' homeserver, in its own venv (tests/synapse_server.py).
scripts/install_synapse.sh
# The third-party MCP servers (PyPI into .venv-mcp, npm from tests/mcp_npm's lock file).
scripts/install_mcp_servers.sh
# Three workers (pytest-xdist) on the machines' two cores: the tests wait on real
# servers (IMAP, Synapse, Redis, daemons starting) as much as they compute, and with
# two workers the cores were idle 27 % of the run (pytest 702 s, busy 73 %); with
# three, 481-509 s at 85 % busy. A later -n in "$@" wins (-n 0: one process).
.venv/bin/python -m pytest -m "not slow" -n 3 "$@"
