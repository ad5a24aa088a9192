"""`wakeful backup` and `wakeful restore`'s arguments, apart from the commands: the CLI's
parser is built for every command, and the backup's imports (tarfile, sqlite3, hashlib)
must not slow `wakeful status` (tests/test_startup_imports.py)."""

from __future__ import annotations

from typing import Any


def add_arguments(sub: Any, add: Any) -> None:
    backup = add(sub, "backup", "copy everything in data_dir into one file (daemon may run)")
    backup.add_argument("file", help="the backup file to write, e.g. wakeful-backup.tar.gz")
    backup.add_argument("--force", action="store_true", help="overwrite an existing file")
    restore = add(sub, "restore", "put a backup back into data_dir (the daemon stopped)")
    restore.add_argument("file", help="a file written by `wakeful backup`")
    restore.add_argument(
        "--force", action="store_true", help="replace data already there (moved aside, kept)"
    )
