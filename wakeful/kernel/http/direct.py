"""Routes answered by the server's protocol itself, below ASGI: the contract.

A webhook sender may post thousands of small requests a second. For each,
the ASGI path builds a scope, a request-response cycle with its event, a
Starlette request and response, and passes four messages between them; that
was about a third of the daemon's CPU per delivery. A direct route instead
gets the request as the parser delivered it (path, header list, whole body)
and gives back a :class:`DirectAnswer`, which the protocol writes in one go.

The protocol (``wakeful.app.http.direct_lane``) hands a request to a direct
route only in the common case: a ``POST`` to a path the route :meth:`takes`,
with a ``Content-Length`` the route accepts and the whole body in the same
read as its head, on a connection with nothing else in flight. Anything
else (a chunked or slow body, ``Expect: 100-continue``, a pipelined request,
a path with a query or escapes) goes the ordinary way, to the same route's
ASGI endpoint, which must answer the same bytes (a test holds both to it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

# Starlette's JSONResponse rendering, with the encoder built once rather than per response.
_ENCODE_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def json_bytes(content: Any) -> bytes:
    """``content`` as ``JSONResponse`` renders it."""
    return _ENCODE_JSON(content).encode("utf-8")


@dataclass(frozen=True, slots=True)
class DirectAnswer:
    """A JSON response: status, body, and headers beyond the two every JSON answer has."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(
        cls, status: int, content: Any, headers: tuple[tuple[str, str], ...] = ()
    ) -> DirectAnswer:
        return cls(status, json_bytes(content), headers)

    @classmethod
    def error(
        cls, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> DirectAnswer:
        """Every error's shape, ``{"error": message}`` (``errors.error_response``
        sends it through ASGI)."""
        return cls.json(status, {"error": message}, headers)

    def head_fields(self) -> bytes:
        """The header lines, in the order Starlette's ``Response`` puts them."""
        lines = [f"{name.lower()}: {value}\r\n".encode("latin-1") for name, value in self.headers]
        lines.append(b"content-length: %d\r\ncontent-type: application/json\r\n" % len(self.body))
        return b"".join(lines)


class DirectRoute(Protocol):
    """A route the server's protocol may answer itself (see the module's text)."""

    @property
    def prefix(self) -> bytes:
        """The start of every path it answers, e.g. ``b"/hooks/"``."""
        ...

    def takes(self, rest: bytes, content_length: int) -> bool:
        """Whether it answers ``prefix + rest`` with a body of this length here; when
        not, the request goes to the route's ASGI endpoint."""
        ...

    async def answer(self, rest: str, headers: dict[str, str], body: bytes) -> DirectAnswer:
        """``headers``: lower-case names, the first value of each. Raises only on a bug
        (the client then gets the app's 500 and the exception is logged)."""
        ...
