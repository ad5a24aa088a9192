"""Running uvicorn inside the daemon's task group, quietly.

Stock ``uvicorn.Server`` wakes ten times a second to check for exit and
installs its own signal handlers. The daemon owns signals itself, and an
idle daemon should not wake at all, so this server waits on an event.
"""

from __future__ import annotations

import gc
import socket
from collections.abc import Generator, Sequence
from contextlib import contextmanager

import anyio
import uvicorn
from anyio.abc import TaskStatus
from starlette.types import ASGIApp

from wakeful.app.config import ServerSection
from wakeful.app.http.connections import fd_headroom, guarded_protocol, limit_notice
from wakeful.app.http.direct_lane import DirectLane
from wakeful.app.http.host_guard import HostGuard, HostPolicy
from wakeful.kernel import codegen_cache
from wakeful.kernel.http.direct import DirectRoute

_heap_frozen = False


def freeze_startup_heap() -> None:
    """Take what start-up built (modules, schemas, config) out of the collector's full passes.

    Those objects live as long as the process, yet each full collection walked
    all of them: ~45 ms per pass with the event loop stalled, several times a
    minute under webhook load. Once per process (tests start many daemons in one).

    No full collection first: it found a few hundred unreachable objects (and, with
    the collector paused for start-up by ``wakeful run``, ~3,000: about 2 MiB) for
    40-70 ms of start → READY; they are frozen with the rest instead. The collector
    is switched on again here in any case.
    """
    global _heap_frozen
    if not _heap_frozen:
        _heap_frozen = True
        codegen_cache.finish()  # what start-up compiled, for the next start
        gc.freeze()
    gc.enable()


class QuietServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.exit_requested = anyio.Event()

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # The daemon's lifespan handles SIGTERM/SIGINT; uvicorn must not.
        yield

    async def main_loop(self) -> None:
        await self.exit_requested.wait()

    def request_exit(self) -> None:
        self.should_exit = True
        self.exit_requested.set()


def bind_socket(host: str, port: int) -> socket.socket:
    """:func:`reserve_port`, listening (for a server that does not listen itself)."""
    sock = reserve_port(host, port)
    sock.listen(1024)
    return sock


def reserve_port(host: str, port: int) -> socket.socket:
    """Bound, not yet listening: a port in use fails at the very start with a clear
    error, and the address is known (the fleet's registry), while a client that comes
    too early is refused as before, not left waiting: uvicorn's server listens on the
    socket once it serves."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says
    # TCP, and accepted sockets inherit it; with proto 0, Nagle + delayed ACK add ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(
            f"cannot listen on {host}:{port}: {exc.strerror}; is another wakeful running? "
            "Change [server] bind in the config or WAKEFUL_SERVER__BIND."
        ) from exc
    sock.setblocking(False)
    return sock


async def serve_http(
    app: ASGIApp,
    sock: socket.socket,
    server_holder: list[QuietServer],
    *,
    server: ServerSection | None = None,
    direct_routes: Sequence[DirectRoute] = (),
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` behind the Host/Origin guard with the ``[server]`` limits;
    ``direct_routes`` are answered by the protocol when a request allows."""
    limits = server if server is not None else ServerSection()
    policy = HostPolicy(limits.allowed_hosts, limits.allowed_origins)
    guarded = HostGuard(app, policy, body_timeout_s=limits.body_timeout_s)
    fd_headroom(limits.max_connections)
    config = uvicorn.Config(
        guarded,
        # httptools (C) parses; GuardedHttpTools adds the head limit, the deadline and
        # admission at the cap. It closes connections idle before their first request as
        # well as between requests, so idle sockets cannot pile up to the fd limit.
        http=guarded_protocol(
            limits.max_connections, DirectLane(direct_routes, policy) if direct_routes else None
        ),
        timeout_keep_alive=max(1, round(limits.idle_timeout_s)),
        # No WebSocket endpoint exists: "auto" would import a WebSocket library whenever
        # one is installed (the discord extra's websockets) only to refuse every upgrade.
        ws="none",
        # No limit_concurrency: GuardedHttpTools admits at the cap and decides the 503
        # itself (at the cap with every connection busy with a request).
        log_config=None,
        access_log=False,
        date_header=False,
        server_header=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
        # Nothing reads client addresses; X-Forwarded-For is not trusted from anyone.
        proxy_headers=False,
    )
    quiet = QuietServer(config)
    server_holder.append(quiet)
    freeze_startup_heap()  # serving starts last: everything start-up builds exists by now
    with limit_notice(limits.max_connections):
        task_status.started()
        await quiet.serve(sockets=[sock])
