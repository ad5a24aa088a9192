"""The host's own wakeful state, which no test may touch.

A test run as root on a machine where wakeful is installed must leave the user's
data, config and running daemon alone: every test works under its own temporary
root. :func:`shape` records what an operator would notice changed (a directory
moved or replaced by a symlink, a file chowned or chmodded, a path that appeared);
the session guard in conftest compares it before and after. It leaves out sizes
and times on purpose: the user's live daemon writes its own database meanwhile.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# The system unit's StateDirectory= and CacheDirectory= (and where DynamicUser= moves
# them), its config, and the user unit's StateDirectory=.
HOST_STATE_PATHS = (
    Path("/var/lib/wakeful"),
    Path("/var/lib/private/wakeful"),
    Path("/var/cache/wakeful"),
    Path("/var/cache/private/wakeful"),
    Path("/etc/wakeful"),
    Path.home() / ".local" / "state" / "wakeful",
)

Entry = tuple[str, int, int, int, str]  # kind, mode, uid, gid, symlink target


def _entry(path: Path) -> Entry | None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    target = os.readlink(path) if stat.S_ISLNK(info.st_mode) else ""
    kind = "link" if target else "dir" if stat.S_ISDIR(info.st_mode) else "file"
    return kind, stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, target


def shape(roots: tuple[Path, ...] = HOST_STATE_PATHS) -> dict[str, Entry | None]:
    """Kind, mode, owner and link target of each root and all under it (symlinks not followed)."""
    found: dict[str, Entry | None] = {}
    for root in roots:
        top = found[str(root)] = _entry(root)
        if top is None or top[0] != "dir":
            continue
        for directory, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                found[os.path.join(directory, name)] = _entry(Path(directory) / name)
    return found


def changes(before: dict[str, Entry | None], after: dict[str, Entry | None]) -> list[str]:
    """What changed: a root that appeared, vanished or was replaced; an entry whose kind,
    mode, owner or target differs. Entries the user's live daemon adds or removes under a
    root are not changes (the roots themselves are in both, present or not)."""
    return [
        f"{path}: {before[path]} -> {after[path]}"
        for path in before
        if path in after and after[path] != before[path]
    ]


def content(root: Path) -> dict[str, bytes]:
    """Every regular file's bytes under ``root`` (for the small canaries a test plants)."""
    return {
        os.path.join(directory, name): (Path(directory) / name).read_bytes()
        for directory, _, files in os.walk(root)
        for name in files
    }
