"""The store going bad under a running daemon, or found bad at start (issue 9).

- A full disk: the daemon stays up, /readyz says 503 naming the store,
  submits get 503 + Retry-After, one log line (not one per request), and it
  recovers by itself once there is room; every event acknowledged with 202
  is answered. As root the data_dir is a small tmpfs that really fills;
  otherwise SQLite's ``PRAGMA max_page_count`` makes the database "full".
- A corrupt SQLite file: ``wakeful run`` exits 1 with one line naming the
  file and how to recover.
- Two daemons on one Redis prefix: the second refuses, naming the holder.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest
import redis
from redis.asyncio import Redis

from tests.daemon_harness import FeedWatcher, Harness, daemon_settings, harness, watch_feed
from tests.daemon_process import DaemonProcess, free_port, run_to_exit, write_config
from tests.fakes.model_server import FakeModelServer
from tests.redis_server import REDIS_URL
from wakeful.kernel.events import user_message
from wakeful.store.base import EventStatus, StoreCorrupt, StoreUnavailable
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

TMPFS_BYTES = 8 * 1024 * 1024


@contextmanager
def small_disk(base: Path) -> Iterator[tuple[Path, str]]:
    """A data_dir on an 8 MiB tmpfs (as root), else a plain directory; and which."""
    path = base / "disk"
    path.mkdir()
    if os.geteuid() != 0:
        yield path, "max_page_count"
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(path)],
                   check=True)  # fmt: skip
    try:
        yield path, "tmpfs"
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


class Filler:
    """Takes the disk's room away and gives it back."""

    def __init__(self, h: Harness, data_dir: Path, how: str) -> None:
        self.h, self.data_dir, self.how = h, data_dir, how
        self._pages = self._pages_now = 0
        self._fills = 0

    async def fill(self) -> None:
        """All but 64 KiB the first time (room for a few events), then the rest."""
        if self.how == "tmpfs":
            free = os.statvfs(self.data_dir)
            room = free.f_bavail * free.f_frsize
            self._fills += 1
            keep = 64 * 1024 if self._fills == 1 else 0
            filler = self.data_dir / f"filler{self._fills}"
            with open(filler, "wb") as out:  # noqa: ASYNC230 — test setup
                out.write(b"\0" * max(room - keep, 0))
            return
        store: SqliteStore = self.h.daemon.store
        self._pages = await store._run(lambda conn: conn.execute("PRAGMA page_count").fetchone()[0])
        self._pages = self._pages or self._pages_now + 4
        await store._run(lambda conn: conn.execute(f"PRAGMA max_page_count = {self._pages}"))

    async def free(self) -> None:
        if self.how == "tmpfs":
            for filler in self.data_dir.glob("filler*"):
                filler.unlink()
            return
        store: SqliteStore = self.h.daemon.store
        await store._run(lambda conn: conn.execute("PRAGMA max_page_count = 1073741823"))


@asynccontextmanager
async def daemon_on_small_disk(
    tmp_path: Path, model_url: str
) -> AsyncIterator[tuple[Harness, Filler]]:
    with small_disk(tmp_path) as (data_dir, how):
        async with harness(daemon_settings(data_dir, model_url)) as h:
            yield h, Filler(h, data_dir, how)


async def test_full_disk_is_not_ready_then_recovers_by_itself(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """503s while full (readyz names the store; one log line), 200 again once there is
    room, and every 202 is answered; the daemon never exits."""
    async with daemon_on_small_disk(tmp_path, model_server.base_url) as (h, filler):
        health = h.daemon.store.health
        accepted: list[str] = []
        await filler.fill()
        refused = None
        for n in range(400):  # until the disk is full
            response = await h.client.post("/api/messages", json={"text": f"{n} " + "x" * 4000})
            if response.status_code == 503:
                refused = response
                break
            assert response.status_code == 202, response.text
            accepted.append(response.json()["event_id"])
        assert refused is not None, f"the disk never filled ({filler.how})"
        await filler.fill()  # what room the failed write left, too
        assert refused.headers["retry-after"] == "5"
        for _ in range(3):
            ready = await h.client.get("/readyz")
            assert ready.status_code == 503
            (problem,) = ready.json()["problems"]
            assert str(h.daemon.store.path) in problem and "cannot write" in problem
        assert health.outages == 1  # one "cannot write" log line for the whole outage
        assert (await h.client.get("/healthz")).status_code == 200
        await filler.free()
        assert (await h.client.get("/readyz")).status_code == 200
        assert health.ok and health.outages == 1
        accepted.append(await h.send("after the disk had room again"))
        async with watch_feed(h) as feed:
            await _until_consumed(h, feed, set(accepted))


async def _until_consumed(h: Harness, feed: FeedWatcher, ids: set[str]) -> None:
    """Until every id is in the trajectory, re-checked as the session's feed moves."""
    with anyio.fail_after(60):
        while True:
            seen = len(feed.items)
            log = (await h.client.get("/api/events", params={"limit": 1000})).json()["events"]
            consumed = {e["id"] for e in log if e["status"] == "consumed"}
            if ids <= consumed:
                return
            await feed.wait_for_more_than(seen, 60)


async def _store_with_events(path: Path, status: EventStatus = EventStatus.PENDING) -> None:
    store = await SqliteStore(path).open()
    for n in range(200):
        await store.append(user_message("y" * 500, event_id=f"e{n}"), status)
    await store.aclose()


def _garbage_over_pages(path: Path, first: int = 4, count: int = 1) -> None:
    """Garbage over b-tree pages of a store file (of 200 events': 5 and 59 are an
    index of events, 11-62 hold the events)."""
    with open(path, "r+b") as db:
        db.seek(4096 * (first - 1))
        db.write(b"\xa5" * 4096 * count)


def _corrupt_database(path: Path) -> None:
    anyio.run(_store_with_events, path)
    _garbage_over_pages(path)


def test_corrupt_sqlite_file_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """PRAGMA quick_check at open: the error names the file and the ways to recover."""
    data_dir = tmp_path / "data"
    config = write_config(data_dir, None, free_port())
    _corrupt_database(data_dir / "wakeful.db")
    done = run_to_exit(config)
    assert done.returncode == 1
    errors = [line for line in done.stdout.splitlines() + done.stderr.splitlines() if
              "error" in line]  # fmt: skip
    assert len(errors) == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = errors
    assert f"{data_dir / 'wakeful.db'} is corrupt" in line
    assert ".recover" in line and "backup" in line and "aside" in line


def test_a_file_that_is_not_a_database_is_the_same_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = write_config(data_dir, None, free_port())
    (data_dir / "wakeful.db").write_bytes(b"this is not SQLite" * 500)
    done = run_to_exit(config)
    assert done.returncode == 1
    assert f"{data_dir / 'wakeful.db'} is corrupt" in done.stdout + done.stderr


async def test_second_daemon_on_one_redis_prefix_refuses(
    tmp_path: Path, model_server: FakeModelServer, redis_prefix: str
) -> None:
    """The first holds the prefix's lease; the second exits 1 naming pid@host; the
    first is untouched and the lease is released when it stops."""
    store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": redis_prefix}
    settings = daemon_settings(tmp_path / "one", model_server.base_url, store=store)
    async with harness(settings) as h:
        port = free_port()
        config = redis_daemon_config(tmp_path / "two", model_server.base_url, redis_prefix, port)
        done = await anyio.to_thread.run_sync(run_to_exit, config)
        assert done.returncode == 1
        output = done.stdout + done.stderr
        assert f"pid {os.getpid()}@{socket.gethostname()}" in output
        assert redis_prefix in output and "Traceback" not in output
        await h.send("the first daemon still answers")
        assert (await h.client.get("/readyz")).status_code == 200
    # Released at close: a daemon may take the prefix now.
    with DaemonProcess(config, port) as second:
        second.send("now the second one may run")


async def test_redis_keys_of_the_wrong_type_are_one_clear_error(redis_prefix: str) -> None:
    """The Redis side of quick_check: a key under the prefix the store did not write."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.set(f"{redis_prefix}sessions", "not a set")
    finally:
        client.close()
    with pytest.raises(StoreCorrupt, match=r"sessions: found string, expected set"):
        await RedisStore(REDIS_URL, prefix=redis_prefix).open()


async def test_sqlite_health_goes_bad_once_and_comes_back_on_a_probe(tmp_path: Path) -> None:
    """A failing write marks the store unhealthy (counted once per outage); a read or a
    small write that works does not mark it healthy; the probe's write that works does."""
    store = await SqliteStore(tmp_path / "wakeful.db").open()
    try:
        pages = await store._run(lambda conn: conn.execute("PRAGMA page_count").fetchone()[0])
        await store._run(lambda conn: conn.execute(f"PRAGMA max_page_count = {pages}"))
        for _ in range(2):
            with pytest.raises(StoreUnavailable, match="full"):
                await store.probe_write()
        assert not store.health.ok and store.health.outages == 1
        await store.pending("main")
        assert not store.health.ok
        await store._run(lambda conn: conn.execute("PRAGMA max_page_count = 1073741823"))
        await store.append(user_message("hello", event_id="e1"))
        assert not store.health.ok
        await store.probe_write()
        assert store.health.ok and store.health.outages == 1
    finally:
        await store.aclose()


async def test_a_file_written_by_schema_version_1_gains_the_new_columns(tmp_path: Path) -> None:
    """Files from before quarantine (no attempts/failure columns) open and work."""
    path = tmp_path / "wakeful.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
        " session TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,"
        " strategy TEXT, reason TEXT, parallel_answer TEXT, accepted_at REAL NOT NULL,"
        " consumed_at REAL); PRAGMA user_version = 1;"
    )
    event = user_message("from an old daemon", event_id="old:1")
    old.execute(
        "INSERT INTO events (id, session, kind, body, status, accepted_at)"
        " VALUES (?, 'main', 'user.input', ?, 'pending', 1.0)",
        (event.id, event.to_json()),
    )
    old.commit()
    old.close()
    store = await SqliteStore(path).open()
    try:
        (stored,) = await store.pending("main")
        assert stored.event.id == "old:1" and stored.attempts == 0 and stored.failure is None
        assert await store.note_attempt(["old:1"]) == {"old:1": 0}
        assert await store.quarantine(["old:1"], "test") == ["old:1"]
    finally:
        await store.aclose()


def redis_daemon_config(data_dir: Path, model_url: str, prefix: str, port: int) -> Path:
    config = write_config(data_dir, model_url, port)
    with open(config, "a") as extra:
        extra.write(
            f'[store]\nbackend = "redis"\nredis_url = "{REDIS_URL}"\nredis_prefix = "{prefix}"\n'
        )
    return config


def test_a_killed_daemons_lease_is_taken_over_at_once(
    tmp_path: Path, model_server: FakeModelServer, redis_prefix: str
) -> None:
    """After SIGKILL the lease is still in Redis; the restarted daemon on the same
    host sees its holder is dead and takes it over instead of waiting for it to lapse."""
    port = free_port()
    config = redis_daemon_config(tmp_path / "data", model_server.base_url, redis_prefix, port)
    with DaemonProcess(config, port) as first:
        first.send("before the kill")
        first.kill()
    with DaemonProcess(config, port) as second:
        second.wait_for_log("took over the Redis prefix lease")
        second.send("after the kill")


async def test_redis_outage_marks_the_store_unhealthy_until_a_probe_writes(
    redis_prefix: str,
) -> None:
    """Redis unreachable: calls raise StoreUnavailable and the health names it; once
    Redis answers again the probe's write makes it healthy."""
    store = await RedisStore(REDIS_URL, prefix=redis_prefix, timeout_s=1.0).open()
    working = store._client
    try:
        store._client = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")  # nobody there
        with pytest.raises(StoreUnavailable, match="cannot answer"):
            await store.append(user_message("lost?", event_id="e1"))
        assert not store.health.ok and "Redis at redis://127.0.0.1:6379/0" in store.health.name
        await store._client.aclose()
        store._client = working
        await store.pending("main")
        assert not store.health.ok  # a read says nothing about writes
        await store.probe_write()
        assert store.health.ok and store.health.outages == 1
    finally:
        store._client = working
        await store.aclose()


async def test_a_page_corrupted_under_a_running_store_is_unavailable_not_500(
    tmp_path: Path,
) -> None:
    """ "database disk image is malformed" at run time is StoreUnavailable (so 503 with
    Retry-After, and /readyz names it), not an unexpected error (500 on every message)."""
    path = tmp_path / "wakeful.db"
    await _store_with_events(path)
    store = await SqliteStore(path).open()
    try:
        _garbage_over_pages(path, first=11, count=5)
        await store._run(lambda conn: conn.execute("PRAGMA shrink_memory"))  # drop cached pages
        with pytest.raises(StoreUnavailable, match="malformed"):
            await store.event_log(None, limit=1000)
        assert not store.health.ok and "malformed" in store.health.describe()
    finally:
        await store.aclose()


async def test_a_running_daemon_whose_file_goes_corrupt_is_unready_and_answers_503(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The issue's case: a corrupt page must not leave /readyz at 200 while requests
    fail; reads of the API answer 503 + Retry-After, and the daemon stays up."""
    await _store_with_events(tmp_path / "wakeful.db", EventStatus.CONSUMED)  # nothing to do
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        assert (await h.client.get("/readyz")).status_code == 200
        store = h.daemon.store
        # Everything in the main file (not the WAL), then no page left in memory.
        await store._run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        _garbage_over_pages(tmp_path / "wakeful.db", first=5, count=58)  # events, indexes
        await store._run(lambda conn: conn.execute("PRAGMA shrink_memory"))
        ready = await h.client.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert any("wakeful.db" in problem for problem in ready.json()["problems"])
        for path in ("/api/status", "/api/events"):
            response = await h.client.get(path)
            assert response.status_code == 503, (path, response.text)
            assert response.headers["retry-after"] == "5"
        assert (await h.client.get("/healthz")).status_code == 200
