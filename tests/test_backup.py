"""`wakeful backup` and `wakeful restore`, run as a user would (the installed command, a
real daemon, a real fake model server): a backup taken while messages pour in restores to
one consistent moment (every event accepted before it began, each session's trajectory a
prefix of the live one), and a daemon started on the restored data answers; a restore
refuses a running daemon's data, data already there without --force, and a damaged file.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer
from tests.test_documented_commands import shell_lines

SESSIONS = ("main", "ops")


def wakeful(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def rows(db: Path, query: str) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return connection.execute(query).fetchall()
    finally:
        connection.close()


def restored_config(tmp_path: Path, model_url: str | None = None) -> tuple[Path, Path, int]:
    """A config whose data_dir does not exist yet (the restore makes it)."""
    data = tmp_path / "restored" / "data"
    port = free_port()
    config = write_config(tmp_path / "restored-config", model_url, port)
    text = config.read_text().replace(str(tmp_path / "restored-config"), str(data))
    config.write_text(text)
    return config, data, port


def trajectories(db: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for session, body in rows(db, "SELECT session, body FROM messages ORDER BY seq"):
        found.setdefault(str(session), []).append(str(body))
    return found


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


def test_a_backup_taken_under_load_restores_one_consistent_moment(
    tmp_path: Path, model: FakeModelServer
) -> None:
    port = free_port()
    live = tmp_path / "live"
    config = write_config(live, model.base_url, port)
    memory = live / "MEMORY.md"
    memory.write_text("- the owner's dog is called Biscuit\n", encoding="utf-8")
    accepted: list[str] = []
    backup = tmp_path / "wakeful-backup.tar.gz"
    with DaemonProcess(config, port) as daemon:
        started = threading.Event()
        stop = threading.Event()

        def pour() -> None:
            n = 0
            while not stop.is_set():
                accepted.append(daemon.send(f"message {n}", session=SESSIONS[n % 2]))
                n += 1
                if n == 10:
                    started.set()

        sender = threading.Thread(target=pour)
        sender.start()
        try:
            assert started.wait(30)
            before = list(accepted)
            done = wakeful(config, "backup", str(backup))
        finally:
            stop.set()
            sender.join(30)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("backed up ") and f"to {backup}" in done.stdout
        assert daemon.stop() == 0

    restored, data, port = restored_config(tmp_path, model.base_url)
    done = wakeful(restored, "restore", str(backup))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("restored ") and str(data) in done.stdout
    db = data / "wakeful.db"
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    ids = {str(r[0]) for r in rows(db, "SELECT id FROM events")}
    assert set(before) <= ids  # everything accepted before the backup began
    assert ids <= set(accepted) | {i for i in ids if not i.startswith("msg:")}
    assert (data / "MEMORY.md").read_text(encoding="utf-8") == memory.read_text(encoding="utf-8")
    assert not (data / "wakeful.lock").exists()
    live_trajectories = trajectories(live / "wakeful.db")
    for session, messages in trajectories(db).items():
        assert messages == live_trajectories[session][: len(messages)]  # one moment of it
    with DaemonProcess(restored, port) as again:
        requests = len(model.requests)
        again.send("are you back?", session="main")
        model.wait_for_requests(requests + 1, timeout_s=20)
        assert again.stop() == 0
    assert model.violations == []


def test_restore_refuses_a_running_daemons_data_and_data_without_force(
    tmp_path: Path, model: FakeModelServer
) -> None:
    port = free_port()
    config = write_config(tmp_path / "live", model.base_url, port)
    backup = tmp_path / "b.tar.gz"
    with DaemonProcess(config, port):
        assert wakeful(config, "backup", str(backup)).returncode == 0
        again = wakeful(config, "backup", str(backup))
        assert again.returncode == 1 and "already exists; use --force" in again.stderr
        refused = wakeful(config, "restore", "--force", str(backup))
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
        assert "another wakeful" in refused.stderr or "is using" in refused.stderr
    before = sorted(p.name for p in (tmp_path / "live").iterdir())
    refused = wakeful(config, "restore", str(backup))
    assert refused.returncode == 1 and "already holds data; use --force" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "live").iterdir()) == before
    forced = wakeful(config, "restore", "--force", str(backup))
    assert forced.returncode == 0, forced.stderr
    (aside,) = tmp_path.glob("live.before-restore-*")
    assert (aside / "wakeful.db").is_file()  # moved aside, not deleted
    assert "what was there is kept in" in forced.stdout and str(aside) in forced.stdout


def test_a_damaged_backup_is_refused_before_anything_is_touched(
    tmp_path: Path, model: FakeModelServer
) -> None:
    port = free_port()
    config = write_config(tmp_path / "live", model.base_url, port)
    backup = tmp_path / "b.tar.gz"
    with DaemonProcess(config, port) as daemon:
        daemon.send("hello")
        assert wakeful(config, "backup", str(backup)).returncode == 0
    # The same archive with one byte of the store changed (the manifest kept).
    damaged = tmp_path / "damaged.tar.gz"
    with tarfile.open(backup) as source, tarfile.open(damaged, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member)
            body = data.read() if data is not None else b""
            if member.name == "data/wakeful.db":
                body = body[:-1] + bytes([body[-1] ^ 1])
            target.addfile(member, io.BytesIO(body))
    restored, data, _ = restored_config(tmp_path)
    refused = wakeful(restored, "restore", str(damaged))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "wakeful.db does not match its checksum" in refused.stderr
    assert not data.exists()
    not_one = tmp_path / "notes.txt"
    not_one.write_text("hello")
    refused = wakeful(restored, "restore", str(not_one))
    assert refused.returncode == 1 and "not a wakeful backup" in refused.stderr
    with tarfile.open(backup) as archive:
        member = archive.extractfile("manifest.json")
        assert member is not None
        manifest = json.loads(member.read())
    assert manifest["format"] == "wakeful-backup/1" and "wakeful.db" in manifest["files"]


def test_the_guides_commands_run_as_written(tmp_path: Path, model: FakeModelServer) -> None:
    """docs/backup.md's command lines, exactly as written, with the config found the way
    the guide says ($WAKEFUL_CONFIG): the backup beside a running daemon, the restore
    into another machine's empty data directory."""
    backup_line, restore_line = shell_lines(Path(__file__).parents[1] / "docs" / "backup.md")
    port = free_port()
    config = write_config(tmp_path / "live", model.base_url, port)
    restored, data, _ = restored_config(tmp_path)
    with DaemonProcess(config, port) as daemon:
        daemon.send("hello")
        as_written(backup_line, config, tmp_path)
    as_written(restore_line, restored, tmp_path)
    assert (data / "wakeful.db").is_file()


def as_written(line: str, config: Path, cwd: Path) -> None:
    """One documented line through bash, the config found by $WAKEFUL_CONFIG, the
    installed `wakeful` first on PATH; it must succeed."""
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "WAKEFUL_CONFIG": str(config)}
    done = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
