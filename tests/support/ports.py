"""A free TCP port on 127.0.0.1 for a test's server, outside the kernel's ephemeral range.

``bind(("127.0.0.1", 0))`` hands out a port from the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 here), the same pool
every outgoing connection on the machine draws from. Once the probe socket is
closed, any client connection (the suite opens thousands) may take that port
before the test's server binds it; and a daemon restarted on its port after
SIGKILL found it "Address already in use" (CI, test_whatsapp_sigkill). Below the
range no outgoing connection ever lands, so only another test picking the same
port at random could collide, and the port is checked bindable first.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20_000  # above the well-known and most registered service ports
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_port() -> int:
    low = _ephemeral_low()
    if low - LOWEST >= 1_000:
        for _ in range(200):
            port = random.randrange(LOWEST, low)
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:  # a service or another test holds it: another one
                    continue
                return port
    with socket.socket() as sock:  # no room below the range: the kernel's choice
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found
