"""The data dir holds the event log, trajectories, tool outputs and the admin
token: nobody but the daemon's user should read it.

Under the usual umask 022 the database and ``outputs/`` came out
world-readable. :func:`secure_data_dir` sets umask 077 for everything the
daemon creates from then on and warns loudly about what already exists
readable by others (a 0755 data dir from an older install, a copied backup).
It warns rather than refuses: fixing it is one ``chmod`` the message gives,
and refusing would turn an upgrade into an outage.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

PRIVATE_UMASK = 0o077


def others_can_read(path: Path) -> bool:
    """Group or others may read (or, for a dir, enter) ``path``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IRWXG | stat.S_IRWXO))


def exposed_paths(data_dir: Path) -> list[Path]:
    """``data_dir`` and its direct entries that others can read, sorted."""
    found = [data_dir] if others_can_read(data_dir) else []
    try:
        entries = sorted(data_dir.iterdir())
    except OSError:
        return found
    return found + [entry for entry in entries if others_can_read(entry)]


def secure_data_dir(data_dir: Path) -> list[Path]:
    """umask 077 from now on; one warning naming what others can already read. Returns it."""
    os.umask(PRIVATE_UMASK)
    exposed = exposed_paths(data_dir)
    if exposed:
        names = ", ".join(str(p) for p in exposed[:5])
        more = f" and {len(exposed) - 5} more" if len(exposed) > 5 else ""
        log.warning(
            "the data dir is readable by other users: it holds events, trajectories, "
            "tool outputs and the admin token",
            exposed=names + more,
            fix=f"chmod -R go-rwx {data_dir}",
        )
    return exposed
