"""`systemctl --user` for `wakeful onboard`'s tests (this machine has no systemd): each
call is recorded; ``enable --now UNIT`` starts the installed unit's ExecStart= the way a
user manager would (``%h``, ``%E`` and ``%%`` expanded, StateDirectory= given as
$STATE_DIRECTORY), detached, its pid written for the test to stop it.

    FAKE_SYSTEMCTL_DIR: where calls.txt, unit.pid and unit.log go
    FAKE_SYSTEMCTL_FAIL: answer every call as systemctl does without a user manager
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path


def expand(text: str) -> str:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    marker = "\0"
    text = text.replace("%%", marker).replace("%h", os.environ["HOME"]).replace("%E", config)
    return text.replace(marker, "%")


def main(argv: list[str]) -> int:
    record = Path(os.environ["FAKE_SYSTEMCTL_DIR"])
    with (record / "calls.txt").open("a") as calls:
        calls.write(" ".join(argv) + "\n")
    if os.environ.get("FAKE_SYSTEMCTL_FAIL"):
        print("Failed to connect to bus: No medium found", file=sys.stderr)
        return 1
    if argv[:3] != ["--user", "enable", "--now"]:
        return 0
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    unit = Path(config) / "systemd" / "user" / argv[3]
    lines = unit.read_text().splitlines()
    [exec_start] = [
        line.removeprefix("ExecStart=") for line in lines if line.startswith("ExecStart=")
    ]
    state = Path(os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"))
    env = {**os.environ, "STATE_DIRECTORY": str(state / "wakeful")}
    with (record / "unit.log").open("ab") as log:
        child = subprocess.Popen(
            shlex.split(expand(exec_start)),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a service outlives the systemctl call that started it
        )
    (record / "unit.pid").write_text(str(child.pid))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
