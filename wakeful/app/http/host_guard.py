"""Host allowlist and Origin check, ahead of every route (hot routes included).

DNS rebinding lets a web page the operator visits talk to 127.0.0.1 under the
attacker's own name: the browser sends ``Host: evil.example``. Serving only
known Host names defeats that; refusing foreign ``Origin`` headers stops a
page from driving the API with a token it learned some other way. A plain
ASGI middleware (not ``BaseHTTPMiddleware``): on an allowed request it costs
one scan of the header list, which keeps the webhook hot path fast.

Host names are matched with any port: rebinding changes the name, never the
port, while an SSH tunnel (``ssh -L 9000:127.0.0.1:8787``) or a container's
port mapping legitimately changes the port. An allowlist entry written with
a port (``"example.com:8443"``) matches only that port. Origins do carry the
port check: a page on ``http://localhost:3000`` is not the daemon's own, nor
one on ``http://localhost`` (port 80) unless the daemon listens on 80.

Webhooks (``/hooks/*``) get the same check on purpose: one rule is easier to
reason about, and an operator who exposes hooks through a proxy that passes
the public Host names it in ``[server] allowed_hosts`` (or ``"*"``). Senders
such as GitHub send no ``Origin``, so the Origin check never touches them.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from wakeful.kernel.http.body import BODY_TIMEOUT_KEY
from wakeful.kernel.http.errors import error_response

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
ANY = "*"


def split_host(value: str) -> tuple[str, int | None]:
    """``name[:port]`` (IPv6 in brackets) → (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        name += "]"
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port_text = value.partition(":")
    port = int(port_text) if port_text.isdigit() else None
    return name, port


class HostPolicy:
    """Which Host and Origin values the daemon answers; built once from ``[server]``."""

    def __init__(self, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]) -> None:
        hosts = [h.strip().lower() for h in allowed_hosts]
        self.any_host = ANY in hosts
        self._names = frozenset({*LOOPBACK_NAMES, *hosts})
        origins = [o.strip().lower().rstrip("/") for o in allowed_origins]
        self.any_origin = ANY in origins
        self._origins = frozenset(origins)

    def host_allowed(self, host: str, own_address: str | None = None) -> bool:
        """``own_address``: the IP the request arrived on, which a client of a daemon
        bound to one LAN address uses as its Host (rebinding cannot produce it: the
        browser sends the attacker's name)."""
        if self.any_host or host.lower() in self._names:
            return True
        name, _ = split_host(host)
        return name in self._names or (own_address is not None and name == own_address)

    def origin_allowed(self, origin: str, bound_port: int | None) -> bool:
        origin = origin.strip().lower().rstrip("/")
        if self.any_origin or origin in self._origins:
            return True
        scheme, sep, host = origin.partition("://")
        if not sep or scheme not in ("http", "https"):
            return False  # "null" (sandboxed pages, file://) and anything odd
        name, port = split_host(host)
        if port is None:  # an origin without a port is on its scheme's default port
            port = 80 if scheme == "http" else 443
        return name in LOOPBACK_NAMES and port == bound_port


class HostGuard:
    """421 for a foreign Host, 403 for a foreign Origin; stamps the body deadline."""

    def __init__(self, app: ASGIApp, policy: HostPolicy, *, body_timeout_s: float) -> None:
        self.app = app
        self.policy = policy
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = request_problem(self.policy, scope["headers"], scope.get("server"))
            if problem is not None:
                status, message = problem
                await error_response(status, message)(scope, receive, send)
                return
            # read_capped (wakeful.kernel.http.body) reads it: one setting, every body.
            scope[BODY_TIMEOUT_KEY] = self.body_timeout_s
        await self.app(scope, receive, send)


def request_problem(
    policy: HostPolicy,
    headers: Iterable[tuple[bytes, bytes]],
    server: tuple[str, int | None] | None,
) -> tuple[int, str] | None:
    """421 for a foreign Host, 403 for a foreign Origin (status, message); None: served.
    ``server``: the address the request arrived on."""
    host = origin = None
    for name, value in headers:
        if name == b"host":
            host = value.decode("latin-1")
        elif name == b"origin":
            origin = value.decode("latin-1")
    return host_origin_problem(policy, host, origin, server)


def host_origin_problem(
    policy: HostPolicy, host: str | None, origin: str | None, server: tuple[str, int | None] | None
) -> tuple[int, str] | None:
    """:func:`request_problem` for the request's last Host and Origin values."""
    port = server[1] if server else None
    own = (f"[{server[0]}]" if ":" in server[0] else server[0]) if server else None
    # No Host at all (HTTP/1.0 tools) cannot be a rebinding browser: served.
    if host is not None and not policy.host_allowed(host, own):
        return 421, (
            f"Host {host!r} is not served here; add it to [server] allowed_hosts "
            "if this daemon is meant to answer that name"
        )
    if origin is not None and not policy.origin_allowed(origin, port):
        return 403, (
            f"Origin {origin!r} may not call this daemon; add it to "
            "[server] allowed_origins if that page is yours"
        )
    return None
