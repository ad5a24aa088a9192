"""The environment a command the agent runs gets: the few variables a shell needs.

Never the daemon's own: its environment holds the model API key, systemd's
``CREDENTIALS_DIRECTORY`` and whatever the operator exported, and a child that
inherits it can print them into the trajectory (``env``, ``cat $CREDENTIALS_DIRECTORY/*``).
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Passed on when the daemon has them: they change how output looks, not what a
# command may reach.
PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def child_environment(workspace: Path) -> dict[str, str]:
    """PATH, locale and time zone from the daemon; HOME is the workspace."""
    env = {name: os.environ[name] for name in PASSED_ON if os.environ.get(name)}
    env.setdefault("PATH", DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = str(workspace)
    env["TERM"] = "dumb"  # no colour codes or pagers in captured output
    return env
