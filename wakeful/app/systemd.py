"""Talking to systemd: the sd_notify datagram protocol and the watchdog.

The protocol is one ``KEY=VALUE`` datagram per state change sent to the
``AF_UNIX`` socket named by ``$NOTIFY_SOCKET`` (a leading ``@`` names an
abstract socket). Without the variable every call is a no-op, so the daemon
runs the same under systemd, in a terminal and in tests.

The watchdog ping is an anyio task on the daemon's own event loop, not a
thread: if the loop blocks, the pings stop and systemd restarts the service —
which is the point of the watchdog.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

import anyio
import structlog

log = structlog.get_logger(__name__)


class Notifier:
    """Sends sd_notify messages; does nothing when no socket was given."""

    def __init__(self, address: str | None) -> None:
        self.address = address or None
        self._sock: socket.socket | None = None
        if self.address is not None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Notifier:
        env = os.environ if env is None else env
        return cls(env.get("NOTIFY_SOCKET"))

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def send(self, **fields: str) -> bool:
        """Send ``KEY=value`` lines in one datagram; False if systemd did not get it."""
        if self._sock is None or self.address is None:
            return False
        payload = "\n".join(f"{key}={value}" for key, value in fields.items())
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            self._sock.sendto(payload.encode(), target)
        except OSError as exc:
            # Not fatal: the service keeps working; systemd will time it out if it cares.
            log.warning("cannot notify systemd", socket=self.address, error=str(exc))
            return False
        return True

    def ready(self, status: str) -> None:
        self.send(READY="1", STATUS=status)

    def status(self, status: str) -> None:
        self.send(STATUS=status)

    def stopping(self, status: str, extend_s: float) -> None:
        """Shutdown started; it may take up to ``extend_s`` more seconds."""
        self.send(STOPPING="1", STATUS=status, EXTEND_TIMEOUT_USEC=str(int(extend_s * 1e6)))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def watchdog_interval(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds between pings (half of ``WATCHDOG_USEC``), or None when not asked.

    ``WATCHDOG_PID``, when set, names the process the watchdog is meant for; a
    child that inherited the environment must not ping on its parent's behalf.
    """
    env = os.environ if env is None else env
    usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid != str(os.getpid()):
        return None
    return int(usec) / 2e6


async def ping_watchdog(notifier: Notifier, interval_s: float) -> None:
    """Ping until cancelled; runs on the event loop so a blocked loop stops it."""
    while True:
        notifier.send(WATCHDOG="1")
        await anyio.sleep(interval_s)
