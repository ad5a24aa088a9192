"""One HTTP GET to addresses already checked, never to the name again.

An HTTP client given a URL with a host name resolves it when it connects; a
rebinding DNS server can answer that second lookup with 127.0.0.1 after the
guard saw a public address. So the request's URL carries the checked IP, while
the ``Host`` header and TLS (SNI and certificate check) keep the name. No proxy
from the environment is used: it would connect somewhere unchecked. The body is
read up to a cap and then the connection is dropped.
"""

from __future__ import annotations

import ssl
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

# httpx/httpcore take ~0.15 s to import: loaded at the first fetch, not at start-up.
if TYPE_CHECKING:
    import httpcore

from wakeful.safety.outbound import Destination

_USER_AGENT = "wakeful-fetch_url/0.1"
_ACCEPT = "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5"


@dataclass(frozen=True)
class Target:
    """A URL split for one request: ``host`` is ASCII (IDNA), without brackets."""

    scheme: str  # "http" or "https"
    host: str
    port: int
    path: bytes  # path and query, percent-encoded
    default_port: bool  # the port was not written in the URL

    def host_header(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.default_port else f"{shown}:{self.port}"


@dataclass(frozen=True)
class Fetched:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes
    truncated: bool  # the body was longer than the cap; what is here is its start
    address: str  # the checked address that answered


class ContentEncodingError(Exception):
    """The body is compressed in a way that cannot be undone here."""


async def get_pinned(
    target: Target,
    destination: Destination,
    *,
    max_bytes: int,
    network_backend: httpcore.AsyncNetworkBackend | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Fetched:
    """GET ``target`` from the first of ``destination.addresses`` that accepts a
    connection; raises the last httpcore error when none does. ``ssl_context`` (for
    https; None: httpcore's default, built per connection) is best built once."""
    import httpcore

    last_error: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
    for address in destination.addresses:
        try:
            return await _get_from(target, address, max_bytes, network_backend, ssl_context)
        except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
            last_error = exc  # the next address may answer (IPv6 down, one host gone)
    assert last_error is not None, "a Destination always has an address"
    raise last_error


async def _get_from(
    target: Target,
    address: str,
    max_bytes: int,
    network_backend: httpcore.AsyncNetworkBackend | None,
    ssl_context: ssl.SSLContext | None,
) -> Fetched:
    import httpcore

    url = httpcore.URL(
        scheme=target.scheme, host=address.partition("%")[0], port=target.port, target=target.path
    )
    headers = [
        ("Host", target.host_header()),
        ("User-Agent", _USER_AGENT),
        ("Accept", _ACCEPT),
        ("Accept-Encoding", "identity"),
        ("Connection", "close"),
    ]
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    async with (
        httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, max_connections=1, network_backend=network_backend
        ) as pool,
        pool.stream("GET", url, headers=headers, extensions=extensions) as response,
    ):
        body, truncated = await _read_capped(response, max_bytes)
        reason = response.extensions.get("reason_phrase", b"")
        named = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
    body, truncated = _decoded(body, truncated, named.get("content-encoding", ""), max_bytes)
    return Fetched(
        status=response.status,
        reason=reason.decode("latin-1") if isinstance(reason, bytes) else "",
        headers=named,
        body=body,
        truncated=truncated,
        address=address,
    )


async def _read_capped(response: httpcore.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:  # stop reading: leaving the block drops the connection
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False


def _decoded(body: bytes, truncated: bool, encoding: str, max_bytes: int) -> tuple[bytes, bool]:
    """Undo gzip/deflate (sent despite ``Accept-Encoding: identity``), capped at
    ``max_bytes`` of output so a small bomb cannot fill memory."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body, truncated
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise ContentEncodingError(f"the server compressed the page with {encoding!r}")
    inflater = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, detected
    try:
        plain = inflater.decompress(body, max_bytes)
    except zlib.error as exc:
        raise ContentEncodingError(f"the {encoding} body is corrupt ({exc})") from exc
    return plain, truncated or bool(inflater.unconsumed_tail)
