"""`wakeful backup FILE` and `wakeful restore FILE`: everything in data_dir in one file.

The backup is taken while the daemon runs: each SQLite database (the store, the memory
index) is copied with SQLite's online backup, so the copy is one consistent moment of
it even while events are being written; every other file (memory notes, spilled tool
outputs, the workspace, the admin token) is copied as it is. A manifest names each
file with its size and SHA-256, and the file is written beside FILE and renamed into
place, so a backup that failed half-way never looks like a good one.

A restore checks every file against the manifest before it touches anything, refuses
while a daemon holds the data_dir (its lock), and refuses a data_dir that already holds
data unless ``--force``; then the old data is moved aside (``<data_dir>.before-restore-
<time>``), not deleted.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from wakeful.cli.client import CliError
from wakeful.kernel.data_dir_lock import LOCK_FILE, DataDirLocked, hold_data_dir_lock

FORMAT = "wakeful-backup/1"
MANIFEST = "manifest.json"
SQLITE_MAGIC = b"SQLite format 3\x00"
# The lock is the running daemon's; a database's journal files are in its backup copy.
SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal")


def run_backup(args: argparse.Namespace, data_dir: Path, store_backend: str) -> int:
    target = Path(args.file).expanduser()
    if not data_dir.is_dir():
        raise CliError(f"daemon.data_dir: {data_dir} does not exist: there is nothing to back up")
    if target.exists() and not args.force:
        raise CliError(f"{target} already exists; use --force to overwrite it")
    started = time.monotonic()
    files: dict[str, dict[str, Any]] = {}
    partial = target.with_name(f".{target.name}.partial")
    try:
        with (
            tempfile.TemporaryDirectory(prefix="wakeful-backup-") as scratch,
            tarfile.open(partial, "w:gz") as archive,
        ):
            for path in _data_files(data_dir, exclude={target.resolve(), partial.resolve()}):
                name = path.relative_to(data_dir).as_posix()
                copy = _consistent_copy(path, Path(scratch))
                files[name] = {**_archived(archive, copy, f"data/{name}"), "sqlite": copy != path}
            manifest = {
                "format": FORMAT,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "data_dir": str(data_dir),
                "store_backend": store_backend,
                "files": files,
            }
            _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=2).encode())
        os.chmod(partial, 0o600)  # it holds the trajectories and the admin token
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from None
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise CliError(f"cannot copy a database in {data_dir}: {exc}") from None
    size = sum(f["size"] for f in files.values())
    print(
        f"backed up {len(files)} files ({size / 2**20:.1f} MiB) from {data_dir} to {target}"
        f" in {time.monotonic() - started:.1f} s"
    )
    if store_backend == "redis":
        print(
            "the store is Redis ([store] backend): its events and sessions are not in this"
            " file; back Redis up with its own tools (BGSAVE)"
        )
    return 0


def run_restore(args: argparse.Namespace, data_dir: Path) -> int:
    source = Path(args.file).expanduser()
    try:
        archive = tarfile.open(source, "r:*")  # noqa: SIM115 (closed by the with below)
    except (OSError, tarfile.TarError) as exc:
        raise CliError(f"{source}: not a wakeful backup ({exc})") from None
    # Held while data_dir is swapped: no daemon may be running on it, or start.
    lock = hold_data_dir_lock(data_dir) if data_dir.is_dir() else nullcontext()
    try:
        with archive, lock:
            return _restore(args, archive, source, data_dir)
    except DataDirLocked as exc:
        raise CliError(str(exc)) from None


def _restore(
    args: argparse.Namespace, archive: tarfile.TarFile, source: Path, data_dir: Path
) -> int:
    manifest = _manifest(archive, source)
    if _holds_data(data_dir) and not args.force:
        raise CliError(
            f"{data_dir} already holds data; use --force to replace it"
            " (what is there is moved aside, not deleted)"
        )
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{data_dir.name}.restore-", dir=data_dir.parent))
    try:
        _extract_checked(archive, manifest, source, staging)
        aside = _move_aside(data_dir)
        os.chmod(staging / "data", 0o700)
        os.replace(staging / "data", data_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(
        f"restored {len(manifest['files'])} files from {source} (taken"
        f" {manifest['created_at']}) into {data_dir}"
        + (f"; what was there is kept in {aside}" if aside else "")
    )
    return 0


def _data_files(data_dir: Path, exclude: set[Path]) -> Iterator[Path]:
    for root, dirs, names in os.walk(data_dir):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if path == data_dir / LOCK_FILE or name.endswith(SKIPPED_SUFFIXES):
                continue
            if path.resolve() in exclude or not path.is_file():
                continue  # the backup itself, a socket, a link to elsewhere
            yield path


def _consistent_copy(path: Path, scratch: Path) -> Path:
    """A SQLite database copied by SQLite's online backup (one moment of it, whatever is
    being written); any other file is added as it is."""
    with path.open("rb") as file:
        if file.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            return path
    copy = scratch / f"{len(list(scratch.iterdir()))}-{path.name}"
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    target = sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
    return copy


class _Hashing(io.RawIOBase):
    """A file read once: into the archive, and through SHA-256 on the way."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        block = self.file.read(size)
        self.digest.update(block)
        return block


def _archived(archive: tarfile.TarFile, path: Path, name: str) -> dict[str, Any]:
    """Add ``path`` as ``name``; its size and SHA-256, from the one read that added it."""
    info = archive.gettarinfo(path, arcname=name)
    with path.open("rb") as file:
        reader = _Hashing(file)
        archive.addfile(info, reader)
    return {"size": info.size, "sha256": reader.digest.hexdigest()}


def _describe(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o600
    archive.addfile(info, io.BytesIO(data))


def _manifest(archive: tarfile.TarFile, source: Path) -> dict[str, Any]:
    try:
        member = archive.extractfile(MANIFEST)
        manifest = json.loads(member.read()) if member is not None else None
    except (KeyError, ValueError, tarfile.TarError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CliError(f"{source}: not a wakeful backup (no {FORMAT} manifest in it)")
    return manifest


def _extract_checked(
    archive: tarfile.TarFile, manifest: dict[str, Any], source: Path, staging: Path
) -> None:
    """Every file of the manifest, and nothing else, with its checksum; before anything
    in data_dir is touched."""
    files: dict[str, dict[str, Any]] = manifest["files"]
    members = [m for m in archive.getmembers() if m.name != MANIFEST]
    names = {m.name.removeprefix("data/") for m in members}
    if names != set(files):
        missing = sorted(set(files) - names)[:3]
        raise CliError(f"{source}: incomplete backup (missing {', '.join(missing) or '?'})")
    try:
        archive.extractall(staging, members=members, filter="data")  # no path leaves staging
    except (OSError, tarfile.TarError) as exc:
        raise CliError(f"{source}: cannot be read back ({exc})") from None
    for name, want in files.items():
        got = _describe(staging / "data" / name)
        if got["sha256"] != want["sha256"]:
            raise CliError(f"{source}: {name} does not match its checksum; the file is damaged")
    (staging / "data").mkdir(exist_ok=True)  # a backup of an empty data_dir


def _holds_data(data_dir: Path) -> bool:
    return data_dir.is_dir() and any(p.name != LOCK_FILE for p in data_dir.iterdir())


def _move_aside(data_dir: Path) -> Path | None:
    if not data_dir.exists():
        return None
    if not _holds_data(data_dir):
        shutil.rmtree(data_dir)
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}")
    os.replace(data_dir, aside)
    return aside
