"""The Redis store beyond the shared contract: connection failures, durability
warnings, retries that stay exactly-once, and the whole daemon on Redis."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
import redis
from redis.exceptions import ResponseError
from structlog.testing import capture_logs

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply
from tests.redis_server import REDIS_URL
from wakeful.app.config import ConfigError, load_settings
from wakeful.kernel.events import user_message
from wakeful.store import redis_store
from wakeful.store.base import EventStatus, StoreUnavailable
from wakeful.store.outbox.record import NewMessage
from wakeful.store.outbox.redis import RedisOutbox
from wakeful.store.outbox.states import DeliveryState
from wakeful.store.redis_setup import durability_warnings, redacted_url, warn_if_not_durable
from wakeful.store.redis_store import RedisStore

pytestmark = pytest.mark.anyio

REDIS_PORT = 6379


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class Proxy:
    """A TCP relay to the real Redis that a test can pause, cut or stop."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.flowing = anyio.Event()
        self.flowing.set()
        self._connections: set[anyio.CancelScope] = set()

    def pause(self) -> None:
        self.flowing = anyio.Event()

    def drop_connections(self) -> None:
        for scope in self._connections:
            scope.cancel()

    async def handle(self, client: anyio.abc.SocketStream) -> None:
        with anyio.CancelScope() as scope:
            self._connections.add(scope)
            try:
                upstream = await anyio.connect_tcp("127.0.0.1", REDIS_PORT)
                async with client, upstream, anyio.create_task_group() as group:
                    group.start_soon(self._pipe, client, upstream)
                    group.start_soon(self._pipe, upstream, client)
            finally:
                self._connections.discard(scope)

    async def _pipe(self, src: anyio.abc.SocketStream, dst: anyio.abc.SocketStream) -> None:
        async for chunk in src:
            await self.flowing.wait()
            await dst.send(chunk)


@asynccontextmanager
async def redis_proxy(port: int = 0) -> AsyncIterator[Proxy]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    proxy = Proxy(listener.extra(anyio.abc.SocketAttribute.local_port))
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, proxy.handle)
        yield proxy
        group.cancel_scope.cancel()


# -- opening ----------------------------------------------------------------------


async def test_unreachable_redis_fails_to_open_with_a_clear_message() -> None:
    """A closed port: StoreUnavailable at once, naming the URL without its password and the fix."""
    port = closed_port()
    store = RedisStore(f"redis://:hunter2@127.0.0.1:{port}/0?password=hunter2", prefix="x:")
    with anyio.fail_after(5), pytest.raises(StoreUnavailable) as failure:
        await store.open()
    message = str(failure.value)
    assert message.startswith(f"cannot reach Redis at redis://***@127.0.0.1:{port}/0: ")
    assert f"connecting to 127.0.0.1:{port}" in message
    assert message.endswith('; start it or set [store] backend = "sqlite"')
    assert "hunter2" not in message


def test_wakeful_run_without_redis_says_why_and_exits_1(tmp_path: Path) -> None:
    """`wakeful run` on an unreachable Redis logs one clear error (no traceback) and exits 1."""
    port = closed_port()
    env = {
        **os.environ,
        "WAKEFUL_DAEMON__DATA_DIR": str(tmp_path),
        "WAKEFUL_SERVER__BIND": "127.0.0.1:0",
        "WAKEFUL_STORE__BACKEND": "redis",
        "WAKEFUL_STORE__REDIS_URL": f"redis://:hunter2@127.0.0.1:{port}/0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "wakeful", "run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output and "hunter2" not in output
    [record] = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert record["event"] == "cannot start"
    assert f"cannot reach Redis at redis://***@127.0.0.1:{port}/0" in record["error"]


def test_redacted_url_drops_credentials_and_query() -> None:
    """Neither userinfo nor a ?password= survives; host, port, db and socket paths do."""
    assert redacted_url("redis://user:pw@db.example:6380/2?password=pw") == (
        "redis://***@db.example:6380/2"
    )
    assert redacted_url("rediss://[::1]:6379/0") == "rediss://[::1]:6379/0"
    assert redacted_url("unix:///run/redis.sock?db=1") == "unix:///run/redis.sock"


def test_store_config_keys(tmp_path: Path) -> None:
    """redis_prefix defaults to "wakeful:"; a redis_url of another scheme is refused unshown."""
    assert load_settings(None).store.redis_prefix == "wakeful:"
    path = tmp_path / "w.toml"
    path.write_text('[store]\nbackend = "redis"\nredis_url = "http://:pw-123@h/0"\n')
    with pytest.raises(ConfigError, match=r"store\.redis_url': must start with redis://") as error:
        load_settings(path)
    assert "pw-123" not in str(error.value)
    path.write_text('[store]\nredis_prefix = ""\n')
    with pytest.raises(ConfigError, match=r"store\.redis_prefix"):
        load_settings(path)


# -- durability warnings ----------------------------------------------------------


def test_durability_warnings_name_what_can_be_lost() -> None:
    """Nothing on disk, snapshots only, and eviction are each warned about; AOF is not."""
    [nothing] = durability_warnings({"appendonly": "no", "save": ""})
    assert "keeps nothing on disk" in nothing and "lost if Redis restarts" in nothing
    [snapshots] = durability_warnings({"appendonly": "no", "save": "3600 1"})
    assert "since the last snapshot" in snapshots
    assert durability_warnings({"appendonly": "yes", "save": "", "maxmemory": "0"}) == []
    [evicts] = durability_warnings(
        {"appendonly": "yes", "maxmemory": "100mb", "maxmemory-policy": "allkeys-lru"}
    )
    assert "maxmemory-policy noeviction" in evicts


async def test_open_warns_as_the_server_config_says(redis_prefix: str) -> None:
    """Opening logs exactly the warnings this server's CONFIG calls for, with the fix."""
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        config: dict[str, str] = {}
        for name in ("appendonly", "save", "maxmemory", "maxmemory-policy"):
            config.update(client.config_get(name))
    finally:
        client.close()
    with capture_logs() as logs:
        store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
        await store.aclose()
    warnings = [log for log in logs if log["log_level"] == "warning"]
    assert [log["event"] for log in warnings] == durability_warnings(config)
    assert all("appendfsync always" in log["how"] for log in warnings)


async def test_config_forbidden_is_tolerated() -> None:
    """A server that refuses CONFIG (managed Redis) gets one warning, not a failure."""

    class NoConfig:
        async def config_get(self, name: str) -> dict[str, str]:
            raise ResponseError("unknown command 'CONFIG'")

    with capture_logs() as logs:
        await warn_if_not_durable(NoConfig(), "redis://h:1/0")  # type: ignore[arg-type]
    [warning] = logs
    assert warning["log_level"] == "warning"
    assert "cannot read Redis's persistence settings" in warning["event"]


# -- failures during operations --------------------------------------------------


async def test_redis_going_away_is_store_unavailable_then_recovers(redis_prefix: str) -> None:
    """Cut connections are reconnected; no Redis at all is StoreUnavailable; back, it works."""
    async with redis_proxy() as proxy:
        port = proxy.port
        store = await RedisStore(proxy.url, prefix=redis_prefix).open()
        assert (await store.append(user_message("one", event_id="e1"))).created
        proxy.drop_connections()
        assert (await store.append(user_message("two", event_id="e2"))).created
    try:
        with pytest.raises(StoreUnavailable, match=r"Redis at redis://127\.0\.0\.1:\d+/0"):
            await store.append(user_message("three", event_id="e3"))
        with pytest.raises(StoreUnavailable):
            await store.pending("main")
        async with redis_proxy(port):
            assert (await store.append(user_message("three", event_id="e3"))).created
            assert [s.event.id for s in await store.pending("main")] == ["e1", "e2", "e3"]
    finally:
        await store.aclose()


async def test_a_stalled_redis_times_out_as_store_unavailable(redis_prefix: str) -> None:
    """Redis that stops answering: StoreUnavailable after the timeout, not a hang."""
    async with redis_proxy() as proxy:
        store = await RedisStore(proxy.url, prefix=redis_prefix, timeout_s=0.3).open()
        try:
            proxy.pause()
            with anyio.fail_after(3), pytest.raises(StoreUnavailable, match="Timeout"):
                await store.append(user_message("stuck", event_id="s1"))
        finally:
            proxy.flowing.set()
            await store.aclose()


async def test_retried_writes_recognise_their_own_first_attempt(
    redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry after a lost reply (same token) reports append created and consume done, once."""
    store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    try:
        monkeypatch.setattr(redis_store, "new_token", lambda: "the-same-attempt")
        first = await store.append(user_message("hi", event_id="e1"))
        again = await store.append(user_message("hi", event_id="e1"))
        assert (first.created, again.created) == (True, True)
        assert again.stored.seq == first.stored.seq
        await store.consume("main", ["e1"], [{"role": "user", "content": "hi"}])
        await store.consume("main", ["e1"], [{"role": "user", "content": "hi"}])
        assert await store.trajectory("main") == [{"role": "user", "content": "hi"}]
        monkeypatch.setattr(redis_store, "new_token", lambda: "another-attempt")
        assert (await store.append(user_message("hi", event_id="e1"))).created is False
        [logged] = await store.event_log("main")
        assert logged.status is EventStatus.CONSUMED
    finally:
        await store.aclose()


async def test_a_claimed_add_whose_answer_was_lost_is_still_reported_created(
    redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outbox's ADD runs in Redis, then the connection drops before its answer: the
    store retries it, and the retry reports the record this call created and claimed, as
    it was written (not "someone else's", which would leave it unsent until a restart)."""
    store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    try:
        outbox = await RedisOutbox(store).open()
        real_add, runs = outbox._scripts["ADD"], []

        async def answer_lost_once(**kwargs: Any) -> Any:
            runs.append(await real_add(**kwargs))
            if len(runs) == 1:
                raise redis.exceptions.ConnectionError("connection lost before the answer")
            return runs[-1]

        monkeypatch.setitem(outbox._scripts, "ADD", answer_lost_once)
        message = NewMessage(session="main", channel="chat:web", text="hi", key="k1")
        record, created = await outbox.add_claimed(message)
        assert len(runs) == 2 and runs[0][0] == 1  # the first run stored it
        assert created is True
        stored = await outbox.get(record.id)
        assert stored is not None and stored == record
        assert (record.state, record.attempts) == (DeliveryState.SENDING, 1)
        # Another call with the same key (its own token) finds it and did not create it.
        again, created_again = await outbox.add_claimed(message)
        assert (again, created_again) == (stored, False)
        assert [m.id for m in await outbox.history("main")] == [record.id]
    finally:
        await store.aclose()


# -- the daemon on Redis ---------------------------------------------------------


def sqlite_tables(path: Path) -> set[str]:
    """Tables in data_dir's SQLite file (timers and email keep theirs there)."""
    with closing(sqlite3.connect(path)) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}


def redis_keys(prefix: str) -> dict[str, Any]:
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return {
            "messages": client.llen(f"{prefix}msgs:main"),
            "events": client.zcard(f"{prefix}log"),
        }
    finally:
        client.close()


async def test_daemon_on_redis_replies_and_resumes_after_restart(
    tmp_path: Path, model_server: FakeModelServer, redis_prefix: str
) -> None:
    """Message in, reply in Redis; an event stored while no model ran is answered after restart."""
    store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": redis_prefix}
    model_server.push(Reply(text="Hello from Redis"))
    async with harness(daemon_settings(tmp_path, model_server.base_url, store=store)) as h:
        async with watch_feed(h) as feed:
            await h.send("hi")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        assert [m["role"] for m in await h.trajectory()] == ["user", "assistant"]
    assert redis_keys(redis_prefix) == {"messages": 2, "events": 1}
    assert sqlite_tables(tmp_path / "wakeful.db").isdisjoint({"events", "messages"})

    no_model = daemon_settings(tmp_path, model_server.base_url, store=store, llm={"model": ""})
    async with harness(no_model) as h:
        event_id = await h.send("are you still there?")
        [waiting] = await h.daemon.store.pending("main")
        assert waiting.event.id == event_id
    assert len(model_server.requests) == 1

    model_server.push(Reply(text="Still here."))
    async with harness(daemon_settings(tmp_path, model_server.base_url, store=store)) as h:
        await model_server.await_requests(2)
        await h.daemon.sessions.get("main").drain()  # returns once the run is finished
        messages = await h.trajectory()
        assert await h.daemon.store.pending("main") == []
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[2]["content"].endswith("are you still there?")
    assert messages[3]["content"] == "Still here."
    assert "are you still there?" in str(model_server.requests[1].body["messages"])
