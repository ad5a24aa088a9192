"""The HTTP API under a real uvicorn server, against an in-test daemon."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from anyio.streams.memory import MemoryObjectSendStream
from starlette.applications import Starlette

from wakeful.app.http.app import create_app
from wakeful.core.feed_sse import StreamRegistry
from wakeful.core.front_door import DaemonUnavailable, FeedItem, SubmitResult
from wakeful.kernel.events import Event

TOKEN = "test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class MemoryDaemon:
    """Records submitted events and fans feed items out to subscribers."""

    def __init__(self) -> None:
        self.submitted: list[Event] = []
        self.unavailable: DaemonUnavailable | None = None
        self.subscribers: dict[str, list[MemoryObjectSendStream[FeedItem]]] = {}
        self.on_submit: Callable[[Event], Awaitable[None]] | None = None
        self.subscribe_error: DaemonUnavailable | None = None
        self.unsubscribed = anyio.Event()

    async def submit(self, event: Event) -> SubmitResult:
        if self.unavailable is not None:
            raise self.unavailable
        duplicate = any(e.id == event.id for e in self.submitted)
        if not duplicate:
            self.submitted.append(event)
            if self.on_submit is not None:
                await self.on_submit(event)
        return SubmitResult(event_id=event.id, duplicate=duplicate)

    async def status(self) -> dict[str, Any]:
        return {"sessions": {"main": {"state": "idle"}}, "queue_depth": len(self.submitted)}

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = [
            {
                "seq": seq,
                "id": e.id,
                "session": e.session,
                "kind": e.kind,
                "channel": e.channel,
                "text": e.content.text,
                "occurred_at": e.occurred_at.isoformat(),
                "status": "accepted",
            }
            for seq, e in enumerate(self.submitted, start=1)
            if session is None or e.session == session
        ]
        return [entry for entry in entries if entry["seq"] > after_seq][:limit]

    async def event_log_newest(
        self, session: str | None, before_seq: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        below = [
            e
            for e in await self.event_log(session, 0, 10**9)
            if not before_seq or e["seq"] < before_seq
        ]
        return {"events": below[-limit:], "older": max(0, len(below) - limit)}

    async def next_request(self, session: str) -> dict[str, Any] | None:
        if session not in await self.known_sessions():
            return None
        system = {"role": "system", "content": "prompt"}
        return {"model": "m", "messages": [system, *await self.trajectory(session)], "tools": []}

    async def known_sessions(self) -> list[str]:
        return sorted({e.session for e in self.submitted})

    async def trajectory(self, session: str, *, full: bool = False) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": e.content.text}
            for e in self.submitted
            if e.session == session
        ]

    @asynccontextmanager
    async def subscribe(self, session: str) -> AsyncIterator[AsyncIterator[FeedItem]]:
        if self.subscribe_error is not None:
            raise self.subscribe_error
        send, receive = anyio.create_memory_object_stream[FeedItem](100)
        self.subscribers.setdefault(session, []).append(send)
        try:
            with receive:
                yield receive
        finally:
            self.subscribers[session].remove(send)
            send.close()
            self.unsubscribed.set()

    def publish(self, session: str, item: FeedItem) -> None:
        for stream in self.subscribers.get(session, []):
            stream.send_nowait(item)

    def subscriber_count(self, session: str) -> int:
        return len(self.subscribers.get(session, []))


@asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    """Run the app under uvicorn on an ephemeral loopback port; yield its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, lifespan="off", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(5):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no started event
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            app.state.streams.close_all()
            server.should_exit = True
    sock.close()


@asynccontextmanager
async def running(
    daemon: MemoryDaemon, *, max_body_bytes: int = 1024, heartbeat_s: float = 15.0
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        daemon, admin_token=TOKEN, max_body_bytes=max_body_bytes, heartbeat_s=heartbeat_s
    )
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=5) as client:
        yield client


@pytest.mark.anyio
async def test_healthz_needs_no_token() -> None:
    """/healthz answers 200 ok without authentication."""
    async with running(MemoryDaemon()) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.anyio
async def test_message_accepted_then_duplicate() -> None:
    """A message is submitted as user.input (202); the same id again is a duplicate."""
    daemon = MemoryDaemon()
    async with running(daemon) as client:
        body = {"session": "user:alice", "text": "hello", "id": "k1"}
        first = await client.post("/api/messages", json=body, headers=AUTH)
        second = await client.post("/api/messages", json=body, headers=AUTH)
    assert first.status_code == 202
    assert first.json() == {"event_id": "k1", "duplicate": False}
    assert second.json() == {"event_id": "k1", "duplicate": True}
    [event] = daemon.submitted
    assert (event.kind, event.session, event.content.text) == ("user.input", "user:alice", "hello")
    assert event.source.trusted


@pytest.mark.anyio
async def test_interrupt_kind_and_idempotency_header() -> None:
    """kind user.interrupt is honoured and the Idempotency-Key header sets the id."""
    daemon = MemoryDaemon()
    async with running(daemon) as client:
        response = await client.post(
            "/api/messages",
            json={"text": "stop", "kind": "user.interrupt"},
            headers={**AUTH, "Idempotency-Key": "idem-7"},
        )
    assert response.status_code == 202
    assert (daemon.submitted[0].id, daemon.submitted[0].kind) == ("idem-7", "user.interrupt")
    assert daemon.submitted[0].session == "main"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}]
)
async def test_missing_or_wrong_token_is_401(headers: dict[str, str]) -> None:
    """Without the right bearer token the API answers 401 with a how-to, never the token."""
    daemon = MemoryDaemon()
    async with running(daemon) as client:
        response = await client.post("/api/messages", json={"text": "hi"}, headers=headers)
        status = await client.get("/api/status", headers=headers)
    assert response.status_code == 401 and status.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "admin-token" in response.json()["error"]
    assert TOKEN not in response.text
    assert daemon.submitted == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"session": "main"}', "'text'"),
        (b'{"text": 5}', "'text'"),
        (b'{"text": "hi", "session": "bad session!"}', "session"),
        (b'{"text": "hi", "kind": "tool.result"}', "'kind'"),
    ],
)
async def test_bad_body_is_400_naming_the_field(body: bytes, field: str) -> None:
    """Malformed messages are refused with a 400 whose error names the problem."""
    async with running(MemoryDaemon()) as client:
        response = await client.post(
            "/api/messages", content=body, headers={**AUTH, "Content-Type": "application/json"}
        )
    assert response.status_code == 400
    assert field in response.json()["error"]


@pytest.mark.anyio
async def test_body_over_cap_by_content_length_is_413() -> None:
    """A declared length over the cap is refused with 413."""
    daemon = MemoryDaemon()
    async with running(daemon, max_body_bytes=100) as client:
        response = await client.post("/api/messages", json={"text": "x" * 200}, headers=AUTH)
    assert response.status_code == 413
    assert "100 bytes" in response.json()["error"]
    assert daemon.submitted == []


@pytest.mark.anyio
async def test_chunked_body_over_cap_is_413() -> None:
    """A chunked body with no length is cut off with 413 once it passes the cap."""
    daemon = MemoryDaemon()

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": "'
        for _ in range(8):
            yield b"x" * 64

    async with running(daemon, max_body_bytes=100) as client:
        response = await client.post("/api/messages", content=chunks(), headers=AUTH)
    assert response.status_code == 413
    assert daemon.submitted == []


@pytest.mark.anyio
async def test_chunked_body_under_cap_is_accepted() -> None:
    """A small chunked body is read whole and accepted."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": '
        yield b'"chunked"}'

    daemon = MemoryDaemon()
    async with running(daemon) as client:
        response = await client.post("/api/messages", content=chunks(), headers=AUTH)
    assert response.status_code == 202
    assert daemon.submitted[0].content.text == "chunked"


@pytest.mark.anyio
async def test_unavailable_daemon_is_503_with_retry_after() -> None:
    """When the daemon cannot commit, the client is told to retry later."""
    daemon = MemoryDaemon()
    daemon.unavailable = DaemonUnavailable("stopping", retry_after_s=7)
    async with running(daemon) as client:
        response = await client.post("/api/messages", json={"text": "hi"}, headers=AUTH)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "7"
    assert "stopping" in response.json()["error"]


@pytest.mark.anyio
async def test_unknown_route_and_method_are_json() -> None:
    """404 and 405 come back as JSON errors like everything else."""
    async with running(MemoryDaemon()) as client:
        missing = await client.get("/nope")
        wrong_method = await client.get("/api/messages", headers=AUTH)
    assert missing.status_code == 404 and "/nope" in missing.json()["error"]
    assert wrong_method.status_code == 405 and "error" in wrong_method.json()


@pytest.mark.anyio
async def test_status_events_and_trajectory() -> None:
    """The read endpoints pass the daemon's answers through, with paging."""
    daemon = MemoryDaemon()
    async with running(daemon) as client:
        for text in ("one", "two", "three"):
            await client.post("/api/messages", json={"text": text}, headers=AUTH)
        await client.post("/api/messages", json={"text": "x", "session": "s2"}, headers=AUTH)
        status = (await client.get("/api/status", headers=AUTH)).json()
        page = await client.get("/api/sessions/main/events?after=1&limit=1", headers=AUTH)
        everything = await client.get("/api/events", headers=AUTH)
        trajectory = await client.get("/api/sessions/main/trajectory", headers=AUTH)
        bad = await client.get("/api/events?limit=0", headers=AUTH)
    assert status["queue_depth"] == 4
    assert [e["text"] for e in page.json()["events"]] == ["two"]
    assert len(everything.json()["events"]) == 4
    assert [m["content"] for m in trajectory.json()["messages"]] == ["one", "two", "three"]
    assert bad.status_code == 400 and "limit" in bad.json()["error"]


async def read_sse(lines: AsyncIterator[str], count: int) -> list[tuple[str, Any]]:
    """Read ``count`` SSE events (name, decoded data) from a line iterator."""
    events: list[tuple[str, Any]] = []
    name = ""
    async for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: "))))
            if len(events) == count:
                break
    return events


@pytest.mark.anyio
async def test_stream_delivers_feed_items_in_order() -> None:
    """Feed items arrive as named SSE events in publication order."""
    daemon = MemoryDaemon()
    items = [{"type": "reply", "text": f"part {i}"} for i in range(5)]
    items.append({"type": "run", "state": "idle"})
    async with (
        running(daemon) as client,
        client.stream("GET", "/api/sessions/main/stream", headers=AUTH) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.aiter_lines()
        assert await anext(lines) == ": ready"
        for item in items:
            daemon.publish("main", item)
        with anyio.fail_after(5):
            received = await read_sse(lines, len(items))
    assert received == [(str(item["type"]), item) for item in items]


@pytest.mark.anyio
async def test_stream_accepts_query_token_and_sends_heartbeats() -> None:
    """EventSource-style ?token= works and idle streams get comment heartbeats."""
    daemon = MemoryDaemon()
    async with (
        running(daemon, heartbeat_s=0.05) as client,
        client.stream("GET", f"/api/sessions/main/stream?token={TOKEN}") as response,
    ):
        lines = response.aiter_lines()
        with anyio.fail_after(5):
            assert await anext(lines) == ": ready"
            while (line := await anext(lines)) == "":
                pass
        assert line == ": keep-alive"


@pytest.mark.anyio
async def test_stream_requires_token() -> None:
    """The stream refuses a request without a token."""
    async with running(MemoryDaemon()) as client:
        response = await client.get("/api/sessions/main/stream")
    assert response.status_code == 401


@pytest.mark.anyio
async def test_stream_ends_when_client_disconnects() -> None:
    """Closing the client's connection unsubscribes the server side promptly."""
    daemon = MemoryDaemon()
    async with running(daemon) as client:
        async with client.stream("GET", "/api/sessions/main/stream", headers=AUTH) as response:
            assert await anext(response.aiter_lines()) == ": ready"
            assert daemon.subscriber_count("main") == 1
        with anyio.fail_after(5):
            await daemon.unsubscribed.wait()
        assert daemon.subscriber_count("main") == 0


@pytest.mark.anyio
async def test_server_shutdown_ends_open_streams() -> None:
    """close_all ends open streams so uvicorn can stop at once."""
    daemon = MemoryDaemon()
    app = create_app(daemon, admin_token=TOKEN, max_body_bytes=1024)
    with anyio.fail_after(5):
        async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
            async with client.stream("GET", "/api/sessions/main/stream", headers=AUTH) as r:
                lines = r.aiter_lines()
                assert await anext(lines) == ": ready"
                registry: StreamRegistry = app.state.streams
                registry.close_all()
                rest = [line async for line in lines]
            assert all(line == "" for line in rest)
            refused = await client.get("/api/sessions/main/stream", headers=AUTH)
            assert refused.status_code == 503
    assert daemon.subscriber_count("main") == 0


@pytest.mark.anyio
async def test_stream_unavailable_is_503() -> None:
    """When the daemon cannot subscribe, the stream answers 503 + Retry-After."""
    daemon = MemoryDaemon()

    daemon.subscribe_error = DaemonUnavailable("store down", retry_after_s=3)
    async with running(daemon) as client:
        response = await client.get("/api/sessions/main/stream", headers=AUTH)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "3"
