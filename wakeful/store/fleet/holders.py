"""Who holds a lease: a name for this daemon process, and whether another one has ended.

No Redis here: the sources that name their owner (a shell task's daemon) read it
without opening a client.
"""

from __future__ import annotations

import os
import socket
import uuid


def process_holder_id() -> str:
    """Names this daemon process (host, pid, and a nonce: a reused pid is another holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_process_gone(holder: str) -> bool:
    """True for a holder id of :func:`process_holder_id` whose process, on this host,
    has ended: its leases need not be waited out (a daemon restarted after SIGKILL)."""
    host, _, rest = holder.partition(":")
    return process_gone(host, rest.partition(":")[0])


def process_gone(host: str, pid_text: str) -> bool:
    """Whether process ``pid_text`` of ``host`` has ended; False when that cannot be
    known here (another host, not a pid) or it runs (if as another user)."""
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False
