"""The systemd user unit `wakeful onboard` installs: the shipped deploy/user/wakeful.service
with two paths put in (this install's ``wakeful`` and the config just written), into
``$XDG_CONFIG_HOME/systemd/user``; started by ``systemctl --user``, called in one place.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

from wakeful.cli.endpoint import base_url
from wakeful.kernel.atomic_file import write_atomic
from wakeful.kernel.config_files import split_bind

UNIT_NAME = "wakeful.service"
# What the shipped unit says, and so what is substituted (tests/test_onboard_unit.py
# checks the unit still says it).
SHIPPED_COMMAND = "%h/.local/share/wakeful-venv/bin/wakeful"
SHIPPED_CONFIG = "%E/wakeful/wakeful.toml"
SHIPPED_DOCS = "%h/.local/share/wakeful-venv/share/doc/wakeful"
READY_TIMEOUT_S = 60.0  # the unit's own TimeoutStartSec=


class SystemctlFailed(Exception):
    """``systemctl --user`` is missing or said no; the text says which, in one line."""


def shipped_unit() -> Path:
    """The unit as installed with the package (share/wakeful/systemd-user), else the
    source tree's deploy/user (an editable install)."""
    candidates = [
        Path(sys.prefix) / "share" / "wakeful" / "systemd-user" / UNIT_NAME,
        Path(__file__).resolve().parents[2] / "deploy" / "user" / UNIT_NAME,
    ]
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        raise SystemctlFailed(f"the shipped {UNIT_NAME} is not in {candidates[0].parent}")
    return found


def wakeful_command() -> str:
    """This install's ``wakeful``: the script beside the interpreter, else ``python -m``."""
    script = Path(sys.executable).with_name("wakeful")
    if script.is_file() and os.access(script, os.X_OK):
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m wakeful"


def unit_text(config: Path) -> str:
    """The shipped unit with this install's command and this config; nothing else changed.
    systemd reads ``%`` as a specifier, so one in a path is doubled."""
    text = shipped_unit().read_text(encoding="utf-8")
    for shipped in (SHIPPED_COMMAND, SHIPPED_CONFIG):
        if shipped not in text:
            raise SystemctlFailed(f"the shipped {UNIT_NAME} no longer runs {shipped}")
    prefix = Path(sys.prefix)
    command = wakeful_command().replace("%", "%%")
    config_arg = shlex.quote(str(config.resolve())).replace("%", "%%")
    text = text.replace(SHIPPED_COMMAND, command).replace(SHIPPED_CONFIG, config_arg)
    return text.replace(SHIPPED_DOCS, str(prefix / "share" / "doc" / "wakeful"))


def unit_dir() -> Path:
    xdg_config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg_config) / "systemd" / "user"


def install_unit(config: Path) -> Path:
    path = unit_dir() / UNIT_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, unit_text(config))
    return path


def systemctl(*args: str) -> None:
    """``systemctl --user ARGS``: the one place it is called (tests put theirs on PATH)."""
    program = shutil.which("systemctl")
    if program is None:
        raise SystemctlFailed("systemctl is not on PATH (is this a systemd system?)")
    done = subprocess.run(
        [program, "--user", *args], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise SystemctlFailed(
            f"systemctl --user {' '.join(args)} failed: {said[-1] if said else done.returncode}"
        )


def start_unit() -> None:
    systemctl("daemon-reload")
    systemctl("enable", "--now", UNIT_NAME)


def wait_ready(bind: str, timeout_s: float = READY_TIMEOUT_S) -> bool:
    """Is the daemon at ``bind`` ready (``/readyz`` 200) within ``timeout_s``?"""
    url = f"{base_url(split_bind(bind))}/readyz"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass  # not listening yet
        time.sleep(0.2)  # polling a process systemd started: there is nothing to await
    return False
