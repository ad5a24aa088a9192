"""Connection-level limits uvicorn's options leave open.

``timeout_keep_alive`` only starts after a response: a client that connects
and sends nothing (or drips its headers) kept its socket forever, and 1,100
such sockets exhausted the default fd limit with nothing logged. The
protocol below gives every connection a deadline to produce a request
whenever none is in flight, a short one for connections beyond the cap
(they could only get a 503), and :func:`fd_headroom` lifts the soft fd
limit above the cap where the hard limit allows. ``limit_concurrency``
answers 503 but logs every refused request; :func:`limit_notice` turns that
into one line per burst.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = structlog.get_logger(__name__)

UVICORN_LIMIT_MESSAGE = "Exceeded concurrency limit."
BURST_QUIET_S = 10.0  # a refusal after this much quiet starts a new burst
OVER_CAP_IDLE_S = 1.0  # a connection beyond the cap gets this long to send a request
# Descriptors beyond the connections: the store, logs, shell tasks' pipes, the model client.
FD_RESERVE = 256


class GuardedHttpTools(HttpToolsProtocol):
    """Closes a connection that has no request in flight for ``timeout_keep_alive`` s."""

    _request_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        cap = self.limit_concurrency
        over_cap = cap is not None and len(self.connections) > cap
        self._arm_request_deadline(OVER_CAP_IDLE_S if over_cap else None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_request_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._request_deadline is not None:
            self._request_deadline.cancel()
            self._request_deadline = None
        super().connection_lost(exc)

    def _arm_request_deadline(self, after_s: float | None = None) -> None:
        if self._request_deadline is not None:
            self._request_deadline.cancel()
        self._request_deadline = self.loop.call_later(
            self.timeout_keep_alive if after_s is None else after_s,
            self._request_deadline_passed,
        )

    def _request_deadline_passed(self) -> None:
        self._request_deadline = None
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing():
            self.transport.close()


def fd_headroom(max_connections: int) -> int:
    """Raise the soft fd limit to what ``max_connections`` needs (the default 1024 is
    less than 500 connections plus a burst beyond them); warn when the hard limit
    does not allow it. Returns the soft limit in force."""
    wanted = 2 * max_connections + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft < max_connections + FD_RESERVE:
        log.warning(
            "the open-file limit is too low for [server] max_connections",
            limit=soft,
            max_connections=max_connections,
            fix=f"raise LimitNOFILE= (ulimit -n) to {wanted} or lower [server] max_connections",
        )
    return soft


class _OncePerBurst(logging.Filter):
    def __init__(self, max_connections: int) -> None:
        super().__init__()
        self.max_connections = max_connections
        self.last_refusal = -BURST_QUIET_S
        self.refused = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != UVICORN_LIMIT_MESSAGE:
            return True
        now = time.monotonic()
        new_burst = now - self.last_refusal >= BURST_QUIET_S
        self.last_refusal = now
        self.refused += 1
        if new_burst:
            log.warning(
                "connection limit reached: answering 503 until connections close",
                max_connections=self.max_connections,
                fix="raise [server] max_connections (and the unit's LimitNOFILE=) "
                "or find the client holding connections",
            )
        return False


@contextmanager
def limit_notice(max_connections: int) -> Iterator[None]:
    """While serving: uvicorn's per-request refusal lines become one per burst."""
    uvicorn_log = logging.getLogger("uvicorn.error")
    notice = _OncePerBurst(max_connections)
    uvicorn_log.addFilter(notice)
    try:
        yield
    finally:
        uvicorn_log.removeFilter(notice)
