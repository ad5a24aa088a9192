"""The protocol's side of direct routes (``wakeful.kernel.http.direct``).

:func:`take` decides, when a request's head is complete, whether a direct
route answers it; :class:`DirectCycle` then stands where uvicorn keeps the
request in flight (``protocol.cycle``), so that uvicorn's own handling of a
pipelined request behind it, of a graceful shutdown and of a lost connection
works unchanged; :func:`response` is the bytes uvicorn would have written for
the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from wakeful.app.http.host_guard import HostPolicy, host_origin_problem
from wakeful.kernel.http.direct import DirectAnswer, DirectRoute
from wakeful.kernel.http.errors import INTERNAL_ERROR

_NOT_PLAIN = (b"?", b"%", b"#", b"/")  # the router would decode, split or ignore these


class _NoEvent:
    """uvicorn sets the cycle's message event when the connection is lost; nobody waits."""

    __slots__ = ()

    def set(self) -> None:
        return None


@dataclass(slots=True, eq=False)
class DirectCycle:
    """A request a direct route is answering, as uvicorn's protocol sees it."""

    keep_alive: bool
    response_complete: bool = False
    disconnected: bool = False
    message_event: _NoEvent = field(default_factory=_NoEvent)


@dataclass(slots=True, eq=False)
class LaneRequest:
    """A request taken into the lane: its body is gathered until the message ends."""

    route: DirectRoute
    rest: str
    headers: dict[str, str]
    keep_alive: bool
    chunks: list[bytes] = field(default_factory=list)  # the body as the parser gave it

    def body(self) -> bytes:
        return b"".join(self.chunks)  # one chunk (the usual case): that object, no copy


@dataclass(frozen=True)
class DirectLane:
    """The direct routes of one server and the Host/Origin rule every request meets."""

    routes: Sequence[DirectRoute]
    policy: HostPolicy

    def take(
        self,
        method: bytes,
        url: bytes,
        headers: list[tuple[bytes, bytes]],
        keep_alive: bool,
        server: tuple[str, int | None] | None,
    ) -> LaneRequest | None:
        """The request, if a direct route answers it (its path plain, its body's length
        given and accepted, its Host and Origin allowed); else None."""
        if method != b"POST":
            return None
        for route in self.routes:
            if url.startswith(route.prefix):
                rest = url[len(route.prefix) :]
                break
        else:
            return None
        if not rest or any(mark in rest for mark in _NOT_PLAIN):
            return None
        length: bytes | None = None
        found: dict[str, str] = {}
        host = origin = None  # the last of each counts, as for the app's HostGuard
        for name, value in headers:
            text = value.decode("latin-1")
            if name == b"content-length":
                length = value
            elif name == b"host":
                host = text
            elif name == b"origin":
                origin = text
            elif name == b"transfer-encoding" or name == b"expect":
                return None
            found.setdefault(name.decode("latin-1"), text)
        if length is None or not length.isdigit() or not route.takes(rest, int(length)):
            return None
        # The app's HostGuard answers a foreign Host or Origin; the lane leaves it that.
        if host_origin_problem(self.policy, host, origin, server) is not None:
            return None
        return LaneRequest(route, rest.decode("ascii", "replace"), found, keep_alive)


def response(answer: DirectAnswer, keep_alive: bool) -> bytes:
    """Status line, headers and body, as uvicorn writes a Starlette response (no Date or
    Server header: the daemon turns both off)."""
    close = b"" if keep_alive else b"connection: close\r\n"
    return STATUS_LINE[answer.status] + answer.head_fields() + close + b"\r\n" + answer.body


def internal_error() -> DirectAnswer:
    return DirectAnswer.error(500, INTERNAL_ERROR)
