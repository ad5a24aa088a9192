"""Issue 10, finding 6: what a hostile or broken client meets, over real HTTP.

The daemon in-process (tests.daemon_harness) for the defaults as shipped;
``serve_http`` alone on a real socket for the ``[server]`` limits a test needs
small (a 1 s idle timeout, two connections), with the same guard and protocol.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
import structlog.testing
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.idle_sockets import closed_by_server, idle_connection
from tests.webhook_fixtures import GITHUB_SECRET, dumps, sign_github
from wakeful.app.config import ServerSection
from wakeful.app.http.serve import QuietServer, bind_socket, serve_http
from wakeful.kernel.http.body import read_json_object
from wakeful.kernel.http.errors import http_error

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def daemon(tmp_path: Path) -> AsyncIterator[Harness]:
    hooks = [{"name": "gh", "auth": "github", "secret": GITHUB_SECRET, "preset": "github"}]
    settings = daemon_settings(tmp_path, "http://127.0.0.1:9", hooks=hooks, llm={"model": ""})
    async with harness(settings) as h:
        yield h


def _port(h: Harness) -> int:
    return int(h.running.url.rsplit(":", 1)[1])


async def test_foreign_host_is_refused_everywhere(tmp_path: Path) -> None:
    """DNS rebinding: a page under evil.example reaching 127.0.0.1 gets 421, not data."""
    async with daemon(tmp_path) as h:
        for path in ("/metrics", "/readyz", "/healthz", "/api/status"):
            response = await h.client.get(path, headers={"Host": "evil.example"})
            assert response.status_code == 421, path
            assert "allowed_hosts" in response.json()["error"]
        body = dumps({"zen": "x", "hook_id": 1})
        hook = await h.client.post(
            "/hooks/gh", content=body, headers={**sign_github(body, "ping"), "Host": "evil.example"}
        )
        assert hook.status_code == 421  # the same rule for hooks (see host_guard.py)


async def test_loopback_names_are_served_with_or_without_a_port(tmp_path: Path) -> None:
    """Any port: an SSH tunnel (ssh -L 9000:127.0.0.1:8787) arrives as localhost:9000."""
    async with daemon(tmp_path) as h:
        port = _port(h)
        hosts = ("127.0.0.1", "localhost", "[::1]", f"localhost:{port}", "LocalHost:9000")
        for host in (*hosts, f"[::1]:{port}"):
            response = await h.client.get("/api/status", headers={"Host": host})
            assert response.status_code == 200, host
        lookalike = await h.client.get("/healthz", headers={"Host": "localhost.evil.example"})
        assert lookalike.status_code == 421


async def test_foreign_origin_is_refused_even_with_the_token(tmp_path: Path) -> None:
    async with daemon(tmp_path) as h:
        message = {"text": "hello"}
        port = _port(h)
        foreign = ("https://evil.example", "null", f"http://evil.example:{port}")
        # Issue 22: an origin without a port is on 80 (http) or 443 (https), not ours.
        portless = ("http://localhost", "https://127.0.0.1", "http://[::1]")
        for origin in (*foreign, f"http://localhost:{port + 1}", *portless):
            response = await h.client.post(
                "/api/messages", json=message, headers={"Origin": origin}
            )
            assert response.status_code == 403, origin
            assert "allowed_origins" in response.json()["error"]
        own = await h.client.post(
            "/api/messages", json=message, headers={"Origin": f"http://127.0.0.1:{_port(h)}"}
        )
        assert own.status_code == 202
        assert await h.daemon.event_log(None, after_seq=0, limit=10) != []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than the limit of 64"),
        (b'{"text": "hi", "n": ' + b"[" * 70 + b"1" + b"]" * 70 + b"}", "limit of 64"),
        (b'{"text": "hi", "n": ' + b"9" * 100_000 + b"}", "more than the limit of 100 digits"),
        (b'{"text": "hi", "n": ' + b"9" * 101 + b"}", "more than the limit of 100 digits"),
        (b'{"text": "hi", "n": NaN}', "NaN is not allowed"),
        (b'{"text": "hi", "n": -Infinity}', "-Infinity is not allowed"),
        (b'{"text": "hi", "n": 1e999999}', "out of range"),
    ],
)
async def test_hostile_json_is_a_400_naming_the_limit(
    tmp_path: Path, body: bytes, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with daemon(tmp_path) as h:
        with caplog.at_level(logging.WARNING):
            response = await h.client.post(
                "/api/messages", content=body, headers={"Content-Type": "application/json"}
            )
            hook = await h.client.post("/hooks/gh", content=body, headers=sign_github(body, "x"))
        assert response.status_code == 400
        assert reason in response.json()["error"]
        assert hook.status_code == 400
        assert reason in hook.json()["error"]
        assert "Traceback" not in caplog.text
        assert await h.daemon.event_log(None, after_seq=0, limit=10) == []


# ---- the [server] limits, with serve_http on a real socket ---------------------------


async def _echo(request: Request) -> Response:
    return JSONResponse(await read_json_object(request, 1024 * 1024))


async def _slow(request: Request) -> Response:
    await anyio.sleep(30)
    return JSONResponse({})


def _app() -> Starlette:
    routes = [Route("/echo", _echo, methods=["POST"]), Route("/slow", _slow, methods=["GET"])]
    return Starlette(routes=routes, exception_handlers={Exception: http_error})


@asynccontextmanager
async def served(
    section: ServerSection, bind_host: str = "127.0.0.1"
) -> AsyncIterator[tuple[str, int]]:
    sock = bind_socket(bind_host, 0)
    port = sock.getsockname()[1]
    servers: list[QuietServer] = []
    async with anyio.create_task_group() as group:
        await group.start(lambda task_status: serve_http(
            _app(), sock, servers, server=section, task_status=task_status
        ))  # fmt: skip
        try:
            yield bind_host, port
        finally:
            servers[0].request_exit()


@asynccontextmanager
async def served_client(
    section: ServerSection, bind_host: str = "127.0.0.1"
) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        served(section, bind_host) as (host, port),
        httpx.AsyncClient(base_url=f"http://{host}:{port}") as client,
    ):
        yield client


async def test_a_slow_body_gets_408_at_the_body_deadline() -> None:
    """A 0.5 B/s body is not held forever: 408 once body_timeout_s has passed."""
    async with served(ServerSection(body_timeout_s=1.0)) as (host, port):
        stream = await anyio.connect_tcp(host, port)
        head = (
            f"POST /echo HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n"
        )
        await stream.send(head.encode() + b'{"a"')
        with anyio.fail_after(5):
            reply = await _read_response(stream)
        assert reply.startswith(b"HTTP/1.1 408 ")
        assert b"body_timeout_s" in reply
        await stream.aclose()


async def test_idle_connections_are_closed() -> None:
    """A connection that never sends a request, or stays idle after one, is closed."""
    async with served(ServerSection(idle_timeout_s=1.0)) as (host, port):
        silent = await anyio.connect_tcp(host, port)
        with anyio.fail_after(5):
            assert await _read_response(silent) == b""  # closed by the server, nothing sent
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            assert (await client.post("/echo", json={"a": 1})).json() == {"a": 1}
        dripping = await anyio.connect_tcp(host, port)
        await dripping.send(b"GET /slow HTTP/1.1\r\nHo")  # headers that never finish
        with anyio.fail_after(5):
            assert await _read_response(dripping) == b""


async def test_connection_cap_answers_503_and_logs_once_per_burst(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only connections busy with a request fill the cap (idle ones make room: issue 22,
    tests/test_front_door_limits.py); with every place busy, a newcomer gets 503."""
    async with served(ServerSection(max_connections=2)) as (host, port):
        held = [await anyio.connect_tcp(host, port) for _ in range(2)]
        for stream in held:
            await stream.send(f"GET /slow HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        with caplog.at_level(logging.WARNING), structlog.testing.capture_logs() as logged:
            async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
                statuses = [(await client.post("/echo", json={})).status_code for _ in range(5)]
        assert statuses == [503] * 5
        notices = [e for e in logged if "connection limit reached" in e["event"]]
        assert len(notices) == 1
        assert notices[0]["max_connections"] == 2
        assert "Exceeded concurrency limit" not in caplog.text
        for stream in held:
            await stream.aclose()


async def test_at_the_cap_the_oldest_waiting_connection_makes_room() -> None:
    """Issue 22: a newcomer at the cap is served; the oldest connection that never sent a
    request is closed, then (none left) the one idle longest between requests."""
    async with served(ServerSection(max_connections=2)) as (host, port):
        oldest = await anyio.connect_tcp(host, port)
        keep_alive = await anyio.connect_tcp(host, port)
        request = f"POST /echo HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 2\r\n\r\n{{}}"
        await keep_alive.send(request.encode())
        with anyio.fail_after(5):
            assert (await _read_response(keep_alive)).startswith(b"HTTP/1.1 200 ")
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            with structlog.testing.capture_logs() as logged:
                assert (await client.post("/echo", json={"a": 1})).status_code == 200
            notices = [e for e in logged if "closing the oldest connections" in e["event"]]
            assert len(notices) == 1 and notices[0]["max_connections"] == 2
            with anyio.fail_after(5):
                assert await _read_response(oldest) == b""  # closed, nothing sent
            newer = await anyio.connect_tcp(host, port)  # the client's own is idle now too
            with anyio.fail_after(5):
                assert await _read_response(keep_alive) == b""  # idle longest: closed
            await newer.send(request.encode())
            with anyio.fail_after(5):
                assert (await _read_response(newer)).startswith(b"HTTP/1.1 200 ")
            await newer.aclose()


async def test_slow_bodies_do_not_fill_the_cap() -> None:
    """Issue 22: a request whose body is still arriving has not been sent whole: at the
    cap the oldest such connection makes room (it would hold a place for body_timeout_s)."""
    async with served(ServerSection(max_connections=2)) as (host, port):
        slow = []
        for _ in range(2):
            stream = await anyio.connect_tcp(host, port)
            head = f"POST /echo HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 100\r\n\r\n"
            await stream.send(head.encode() + b'{"a"')
            slow.append(stream)
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            assert (await client.post("/echo", json={"b": 2})).json() == {"b": 2}
        with anyio.fail_after(5):
            assert await _read_response(slow[0]) == b""  # closed to make room
        for stream in slow:
            await stream.aclose()


async def test_the_head_limit_counts_the_head_not_the_body() -> None:
    """The head limit is counted on raw bytes: a head under it arriving together with a
    large body (one write) is served; 15 KiB of headers are fine, 17 KiB get 431."""
    async with served_client(ServerSection()) as client:
        big = {"blob": "x" * 500_000}
        assert (await client.post("/echo", json=big)).json() == big
        near = {f"x-pad-{i}": "a" * 100 for i in range(140)}  # ~15 KiB of headers
        assert (await client.post("/echo", json={}, headers=near)).status_code == 200
        over = {f"x-pad-{i}": "a" * 100 for i in range(160)}  # ~17 KiB
        refused = await client.post("/echo", json={}, headers=over)
        assert refused.status_code == 431 and "larger than" in refused.json()["error"]


async def test_allowed_hosts_and_origins_are_configurable() -> None:
    section = ServerSection(
        allowed_hosts=["hooks.example.com", "pinned.example.com:8443"],
        allowed_origins=["https://dash.example.com"],
    )
    async with served_client(section) as client:
        ok = await client.post(
            "/echo",
            json={"a": 1},
            headers={"Host": "hooks.example.com:443", "Origin": "https://dash.example.com"},
        )
        assert ok.status_code == 200
        other = await client.post("/echo", json={}, headers={"Host": "evil.example"})
        assert other.status_code == 421
        for host, status in (("pinned.example.com:8443", 200), ("pinned.example.com:80", 421)):
            pinned = await client.post("/echo", json={}, headers={"Host": host})
            assert pinned.status_code == status, host
    async with served_client(ServerSection(allowed_hosts=["*"])) as client:
        anything = await client.post("/echo", json={}, headers={"Host": "proxy.internal"})
        assert anything.status_code == 200
        origin = await client.post("/echo", json={}, headers={"Origin": "https://x.example"})
        assert origin.status_code == 403  # "*" hosts do not open the Origin check


async def test_the_address_the_daemon_is_bound_to_is_a_served_host() -> None:
    """Bound to one address (as to a LAN IP), clients use that IP as Host; others are refused."""
    async with served_client(ServerSection(), bind_host="127.0.0.2") as client:
        assert (await client.post("/echo", json={})).status_code == 200  # Host 127.0.0.2:port
        other = await client.post("/echo", json={}, headers={"Host": "127.0.0.3"})
        assert other.status_code == 421


def test_units_allow_more_descriptors_than_the_connection_cap() -> None:
    root = Path(__file__).resolve().parent.parent
    cap = ServerSection().max_connections
    for unit in ("deploy/wakeful.service", "deploy/user/wakeful.service"):
        lines = (root / unit).read_text().splitlines()
        [limit] = [line.split("=", 1)[1] for line in lines if line.startswith("LimitNOFILE=")]
        assert int(limit) >= 4 * cap, unit


async def _read_response(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while True:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data
        if b"\r\n\r\n" in data and _complete(data):
            return data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


# The shipped [server] defaults, as literals so this test also runs (and fails) on
# code from before they existed; test_shipped_connection_defaults keeps them honest.
SHIPPED_IDLE_TIMEOUT_S = 15
SHIPPED_MAX_CONNECTIONS = 500


def test_shipped_connection_defaults() -> None:
    section = ServerSection()
    assert (section.idle_timeout_s, section.max_connections) == (
        SHIPPED_IDLE_TIMEOUT_S,
        SHIPPED_MAX_CONNECTIONS,
    )


@pytest.mark.slow
def test_a_flood_of_idle_connections_at_the_default_fd_limit_is_survived(tmp_path: Path) -> None:
    """1,100 idle connections against `wakeful run` with 1024 descriptors (soft and
    hard): beyond the cap the oldest idle ones are closed to make room (issue 22),
    so requests keep getting 200, with one log line and nothing refused."""
    port = free_port()
    config = write_config(tmp_path / "data", None, port)
    with DaemonProcess(config, port, open_files=(1024, 1024)) as proc:
        flood = [idle_connection(port) for _ in range(1100)]
        with httpx.Client(base_url=proc.url, timeout=10) as client:
            statuses = [
                client.get("/healthz", headers={"Connection": "close"}).status_code
                for _ in range(20)
            ]
        assert statuses == [200] * 20
        assert not any("answering 503" in line for line in proc.lines)
        assert sum("closing the oldest connections" in line for line in proc.lines) == 1
        # Connections the full backlog made retry their SYN are accepted later (and
        # make room in turn): poll the count until it reaches what the cap implies.
        deadline = time.monotonic() + 10
        open_flood = set(flood)
        while len(open_flood) > SHIPPED_MAX_CONNECTIONS and time.monotonic() < deadline:
            open_flood = {sock for sock in open_flood if not closed_by_server(sock)}
            time.sleep(0.1)  # a poll: the count shows only in the sockets' state
        assert len(open_flood) <= SHIPPED_MAX_CONNECTIONS
        for sock in flood:
            sock.close()
        assert proc.stop() == 0
