"""Webhook deliveries answered below ASGI (wakeful/app/http/direct_lane.py) answer the
same bytes as the ASGI path, and keep HTTP's rules on one connection.

Two daemons with the same hooks: one with the direct lane (the default), one whose
webhook component registers no direct route. Every generated exchange (signed, bad
signature, bad JSON, unknown hook, over the cap, filtered, duplicate, closing,
HTTP/1.0, pipelined) is sent as the same raw bytes to both over real sockets, and
the raw responses must be equal byte for byte: status line, headers and body.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.webhook_fixtures import (
    BEARER_TOKEN,
    NEW_SECRET,
    SMALL_CAP,
    LiveDaemon,
    live_daemon,
    sign_github,
    sign_standard,
)
from wakeful.sources.webhook.component import WebhookComponent
from wakeful.sources.webhook.ingress import HookIngress

_ids = itertools.count()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveDaemon, LiveDaemon]]:
    with (
        live_daemon(tmp_path_factory.mktemp("lane")) as lane,
        live_daemon(tmp_path_factory.mktemp("asgi"), direct_lane=False) as asgi,
    ):
        yield lane, asgi


def ingress(daemon: LiveDaemon) -> HookIngress:
    (component,) = [
        c for c in daemon.harness.running.reloadables if isinstance(c, WebhookComponent)
    ]
    return component.ingress


class Counted:
    """Counts the deliveries a daemon's ingress answered directly and through ASGI (the
    app's route holds the bound ``handle``; both ways run ``_deliver``)."""

    def __init__(self, daemon: LiveDaemon, patch: pytest.MonkeyPatch) -> None:
        self.direct = self.delivered = 0
        hooks = ingress(daemon)
        answer, deliver = hooks.answer, hooks._deliver

        async def counted_answer(*args: Any) -> Any:
            self.direct += 1
            return await answer(*args)

        async def counted_deliver(*args: Any) -> Any:
            self.delivered += 1
            return await deliver(*args)

        patch.setattr(hooks, "answer", counted_answer)
        patch.setattr(hooks, "_deliver", counted_deliver)

    @property
    def asgi(self) -> int:
        return self.delivered - self.direct


def request(
    hook: str, body: bytes, headers: dict[str, str], *, version: str = "1.1", close: bool = False
) -> bytes:
    lines = [f"POST /hooks/{hook} HTTP/{version}"]
    if "host" not in headers:
        lines.append("host: 127.0.0.1")
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if "content-length" not in headers:
        lines.append(f"content-length: {len(body)}")
    if close:
        lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(daemon: LiveDaemon, raw: bytes, answers: int) -> tuple[list[bytes], bool]:
    """Sends ``raw`` in one write; the ``answers`` raw responses, and whether the
    server then closed the connection."""
    host, port = daemon.harness.running.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        buffer = b""
        found: list[bytes] = []
        while len(found) < answers:
            while b"\r\n\r\n" not in buffer:
                chunk = sock.recv(65536)
                assert chunk, f"connection closed after {found}"
                buffer += chunk
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = int(next(v for k, v in _fields(head) if k == b"content-length"))
            while len(rest) < length:
                chunk = sock.recv(65536)
                assert chunk, "connection closed inside a body"
                rest += chunk
            found.append(head + b"\r\n\r\n" + rest[:length])
            buffer = rest[length:]
        sock.settimeout(0.5 if answers and b"connection: close" in found[-1] else 0.05)
        try:
            closed = sock.recv(1) == b""
        except TimeoutError:
            closed = False
    return found, closed


def _fields(head: bytes) -> list[tuple[bytes, bytes]]:
    lines = head.split(b"\r\n")[1:]
    return [(k.strip().lower(), v.strip()) for k, _, v in (line.partition(b":") for line in lines)]


def delivery(kind: str, n: int) -> tuple[str, bytes, dict[str, str]]:
    """One request of a kind, unique by ``n`` where a kind is meant to be new."""
    payload = {"type": "build.finished", "data": {"name": f"job-{n}"}}
    body = json.dumps(payload).encode()
    if kind == "signed":
        return "std", body, sign_standard(NEW_SECRET, body, f"lane-{n}")
    if kind == "duplicate":
        return "std", body, sign_standard(NEW_SECRET, body, "lane-same")
    if kind == "bad-signature":
        headers = sign_standard(NEW_SECRET, body, f"lane-{n}")
        return "std", body + b" ", headers
    if kind == "unsigned":
        return "std", body, {"content-type": "application/json"}
    if kind == "bad-json":
        bad = b'{"type": '
        return "tok", bad, {"authorization": f"Bearer {BEARER_TOKEN}", "content-type": "x/y"}
    if kind == "bearer-text":
        headers = {"authorization": f"Bearer {BEARER_TOKEN}", "content-type": "text/plain"}
        return "tok", f"plain text {n} ünï".encode(), headers
    if kind == "bad-id":
        headers = sign_standard(NEW_SECRET, body, f" lane {n}")
        return "std", body, headers
    if kind == "over-cap":
        big = json.dumps({"pad": "x" * SMALL_CAP}).encode()
        return "small", big, sign_standard(NEW_SECRET, big, f"lane-{n}")
    if kind == "foreign-host":
        return "std", body, {**sign_standard(NEW_SECRET, body, f"lane-{n}"), "host": "evil.example"}
    if kind == "foreign-origin":
        headers = {**sign_standard(NEW_SECRET, body, f"lane-{n}"), "origin": "http://evil.example"}
        return "std", body, headers
    if kind == "unknown-hook":
        return "nope", body, {"content-type": "application/json"}
    if kind == "filtered":
        pr = json.dumps({"action": "closed", "number": n}).encode()
        return "prs", pr, sign_github(pr, "pull_request", f"d-{n}")
    if kind == "github":
        pr = json.dumps({"action": "opened", "number": n, "pull_request": {"title": "t"}})
        return "prs", pr.encode(), sign_github(pr.encode(), "pull_request", f"d-{n}")
    raise AssertionError(kind)


KINDS = [
    "signed",
    "duplicate",
    "bad-signature",
    "unsigned",
    "bad-json",
    "bearer-text",
    "bad-id",
    "over-cap",
    "unknown-hook",
    "foreign-host",
    "foreign-origin",
    "filtered",
    "github",
]
# What the lane answers itself; the others (over the cap, no such hook, a Host or Origin
# the app's guard refuses) go the ASGI way.
DIRECT_KINDS = set(KINDS) - {"over-cap", "unknown-hook", "foreign-host", "foreign-origin"}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
    pipelined=st.booleans(),
    version=st.sampled_from(["1.1", "1.0"]),
    close_last=st.booleans(),
)
def test_the_lane_answers_what_the_asgi_path_answers(
    pair: tuple[LiveDaemon, LiveDaemon],
    kinds: list[str],
    pipelined: bool,
    version: str,
    close_last: bool,
) -> None:
    """On one connection, in one write (pipelined) or one request per connection: the
    same bytes back from both daemons, and the same decision to close."""
    lane, asgi = pair
    n = next(_ids)
    requests = []
    for i, kind in enumerate(kinds):
        hook, body, headers = delivery(kind, n * 10 + i)
        last = i == len(kinds) - 1
        requests.append(request(hook, body, headers, version=version, close=close_last and last))
    # Each write with the number of answers it gets, and the kind of its first request.
    if pipelined and version == "1.1":
        writes = [(b"".join(requests), len(requests), kinds[0])]
    else:
        writes = [(raw, 1, kind) for raw, kind in zip(requests, kinds, strict=True)]
    with pytest.MonkeyPatch.context() as patch:
        counted = Counted(lane, patch)
        for raw, answers, _ in writes:
            got_lane = exchange(lane, raw, answers)
            got_asgi = exchange(asgi, raw, answers)
            assert got_lane == got_asgi
    # The first request of each write meets an idle connection: the lane takes it.
    assert counted.direct >= sum(1 for _, _, first in writes if first in DIRECT_KINDS)


@pytest.mark.parametrize("first_part", [0, 7], ids=["head alone", "head and 7 bytes"])
def test_a_body_that_comes_after_its_head_goes_the_asgi_way(
    pair: tuple[LiveDaemon, LiveDaemon], first_part: int
) -> None:
    """The head (and maybe the body's first bytes) in one write, the rest in the next: the
    lane lets go of it, the ASGI path reads the body, what came with the head included
    (under its deadline), and the answer is the 202 of the whole body."""
    lane, _ = pair
    n = 10_000_000 + first_part
    hook, body, headers = delivery("signed", n)
    raw = request(hook, body, headers)
    head = raw[: len(raw) - len(body) + first_part]
    host, port = lane.harness.running.url.removeprefix("http://").rsplit(":", 1)
    with pytest.MonkeyPatch.context() as patch:
        counted = Counted(lane, patch)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(head)
            # The server answers nothing until the body is there: a read times out.
            sock.settimeout(0.3)
            with pytest.raises(TimeoutError):
                sock.recv(1)
            sock.settimeout(10)
            sock.sendall(raw[len(head) :])
            answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 202 Accepted\r\n"), answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {
        "event_id": f"wh:std:lane-{n}",
        "duplicate": False,
    }
    assert (counted.direct, counted.asgi) == (0, 1)


def test_a_delivery_in_one_write_is_answered_directly_and_stored(
    pair: tuple[LiveDaemon, LiveDaemon],
) -> None:
    lane, _ = pair
    lane.new_events()
    hook, body, headers = delivery("signed", 20_000_000)
    with pytest.MonkeyPatch.context() as patch:
        counted = Counted(lane, patch)
        (answer,), closed = exchange(lane, request(hook, body, headers), 1)
    assert (counted.direct, counted.asgi) == (1, 0)
    assert answer.startswith(b"HTTP/1.1 202 Accepted\r\n") and not closed
    (stored,) = lane.new_events()
    assert stored["id"] == "wh:std:lane-20000000"
    assert stored["source"]["trusted"] is False
    # On the loop `wakeful run` uses, whose transports the lane writes to.
    loop_kind = lane.portal.call(lambda: type(asyncio.get_running_loop()).__module__)
    assert loop_kind.startswith("uvloop")


def test_a_bug_in_the_route_is_the_apps_500_and_the_connection_closes(
    pair: tuple[LiveDaemon, LiveDaemon],
) -> None:
    """As the ASGI path answers an exception in its endpoint: the JSON 500 that names no
    detail, then the connection closes; the daemon goes on taking deliveries."""
    lane, asgi = pair
    hook, body, headers = delivery("signed", 30_000_000)
    raw = request(hook, body, headers)

    async def broken(*args: Any) -> Any:
        raise RuntimeError("a bug")

    with pytest.MonkeyPatch.context() as patch:
        for daemon in pair:
            patch.setattr(ingress(daemon), "_deliver", broken)
        got_lane = exchange(lane, raw, 1)
        got_asgi = exchange(asgi, raw, 1)
    assert got_lane == got_asgi
    (answer,), closed = got_lane
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n") and closed
    assert answer.endswith(b'{"error":"internal error; see the daemon\'s log"}')
    hook, body, headers = delivery("signed", 30_000_001)
    (after,), _ = exchange(lane, request(hook, body, headers), 1)
    assert after.startswith(b"HTTP/1.1 202 Accepted\r\n")
