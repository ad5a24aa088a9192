"""The reviewer's rules for shell commands: destructive ones, and ones that reach secrets.

These read the command line, a structured field, and they are a reviewer's
judgement, not a boundary: a determined spelling gets past any pattern
(``r''m``, ``$(echo rm)``). The boundary is the sandbox and the taint gate;
these rules catch the obvious case early with a reason the model can read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

# Where a command word can start: line start, after ; & | ( or $( or a
# backtick, optionally behind sudo. Keeps "echo shutdown" harmless.
_AT_COMMAND = r"(?:^|[;&|(`\n]|\$\()\s*(?:sudo\s+)?"
_DESTRUCTIVE: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "a recursive delete of / or the home directory",
        re.compile(
            _AT_COMMAND + r"(?:\S*/)?rm\s+(?:-\S*\s+)*-\S*[rR]\S*\s+(?:-\S*\s+)*"
            r"(?:/|/\*|~|~/|~/\*|\$HOME|\$HOME/|\$HOME/\*)(?:\s|$|[;&|])"
        ),
    ),
    ("rm --no-preserve-root", re.compile(r"--no-preserve-root")),
    ("deleting from / with find", re.compile(r"\bfind\s+/\s.*-delete\b")),
    ("making a file system (mkfs)", re.compile(_AT_COMMAND + r"mkfs(?:\.\w+)?\b")),
    (
        "writing to a raw disk device",
        re.compile(r"(?:\bof=|>\s*)/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)\w*"),
    ),
    ("a fork bomb", re.compile(r"(\w+|:)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&")),
    ("killing every process", re.compile(_AT_COMMAND + r"kill\s+(?:-\S+\s+)*-1\b")),
    (
        "shutting down or rebooting the machine",
        re.compile(
            _AT_COMMAND + r"(?:shutdown|reboot|halt|poweroff|init\s+[06]\b"
            r"|systemctl\s+(?:poweroff|reboot|halt|kexec)\b)"
        ),
    ),
    (
        "decoding text and running it as a program",
        re.compile(r"base64\s+(?:-d|--decode)[^|]*\|\s*(?:ba|z|da)?sh\b"),
    ),
)

# Places whose contents are secrets or the daemon's own: a command that names one
# is refused whatever it does with it.
_SECRET_PLACES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("SSH keys", re.compile(r"\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b")),
    ("the system's password hashes", re.compile(r"/etc/(?:g?shadow|sudoers)\b")),
    ("another process's environment", re.compile(r"/proc/[^/\s]+/environ\b")),
    ("systemd credentials", re.compile(r"CREDENTIALS_DIRECTORY|/run/credentials\b")),
    ("the daemon's configuration and secrets", re.compile(r"/etc/wakeful\b|admin-token\b")),
    ("cloud credentials", re.compile(r"\.aws/credentials|\.config/gcloud|\.kube/config\b")),
    ("the root user's home", re.compile(r"(?:^|[\s=:'\"])/root(?:/|\b)")),
)


def destructive_reason(command: str) -> str | None:
    """Why ``command`` looks destructive, or None."""
    for reason, pattern in _DESTRUCTIVE:
        if pattern.search(command):
            return reason
    return None


def secret_reason(command: str, daemon_dirs: Sequence[Path] = ()) -> str | None:
    """Which secret or daemon-owned place ``command`` names, or None."""
    for reason, pattern in _SECRET_PLACES:
        if pattern.search(command):
            return f"it names {reason}"
    for directory in daemon_dirs:
        if str(directory) in command:
            return f"it names the daemon's data directory {directory}"
    return None
