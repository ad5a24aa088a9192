"""Idle TCP connections against a daemon, and a config with a GitHub-signed hook:
what the front-door tests and bench/front_door.py flood and deliver with."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.daemon_process import write_config
from tests.webhook_fixtures import GITHUB_SECRET


def idle_connection(port: int) -> socket.socket:
    """A connection that never sends a byte (the connect completes in the background)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.connect_ex(("127.0.0.1", port))
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except OSError:  # BlockingIOError: still open, nothing sent
        return False


def github_hook_config(root: Path, port: int) -> Path:
    """A config in ``root`` with one ``[[hooks]]`` entry "gh", signed as GitHub signs."""
    config = write_config(root / "data", None, port)
    hook = (
        f'[[hooks]]\nname = "gh"\nauth = "github"\nsecret = "{GITHUB_SECRET}"\npreset = "github"\n'
    )
    config.write_text(config.read_text() + hook)
    return config
