"""Who gives way when the connection cap is reached.

Refusing the newcomer at the cap (uvicorn's ``limit_concurrency``) let 510
idle sockets, opened by anyone without a token, turn every signed webhook
into a 503. Here the newcomer is admitted and the oldest connection that has
not sent a whole request is closed instead: first one that never completed a
request head, then one idling between requests, then one whose request body
is still arriving (a slow body held by anyone, which would otherwise fill
the cap for ``body_timeout_s`` each). Age, not address, decides, so this
holds when every client shares one address (loopback, a proxy). Only when
every connection has sent a whole request that is still being answered (an
event stream, say) does a newcomer meet the cap (503).
"""

from __future__ import annotations

import time
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

NOTICE_QUIET_S = 10.0  # an eviction after this much quiet logs a new line


class Closable(Protocol):
    def close_for_newcomer(self) -> bool:
        """Close the connection; False if it was closing already."""
        ...


class Admission:
    """The connections of one server with no request in flight, oldest first.

    Plain dicts keep insertion order, so the oldest is ``next(iter(...))``:
    admitting a connection at the cap is O(1) however many are open.
    """

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self._last_eviction = -NOTICE_QUIET_S
        self.fresh: dict[Closable, None] = {}  # no request head completed yet
        self.between: dict[Closable, None] = {}  # keep-alive, between requests
        self.receiving: dict[Closable, None] = {}  # head complete, body still arriving
        self.closing = 0  # closed by admission, connection_lost not yet run

    def waiting(self, conn: Closable, *, fresh: bool) -> None:
        self.busy(conn)
        (self.fresh if fresh else self.between)[conn] = None

    def receiving_body(self, conn: Closable) -> None:
        self.busy(conn)
        self.receiving[conn] = None

    def busy(self, conn: Closable) -> None:
        self.fresh.pop(conn, None)
        self.between.pop(conn, None)
        self.receiving.pop(conn, None)

    def make_room(self) -> bool:
        """Close the oldest connection without a whole request; False when there is none."""
        for pool in (self.fresh, self.between, self.receiving):
            while pool:
                conn = next(iter(pool))
                del pool[conn]
                if conn.close_for_newcomer():
                    self.closing += 1
                    self._notice()
                    return True
        return False

    def _notice(self) -> None:
        """One line per burst: many idle connections may be a client holding them."""
        now = time.monotonic()
        if now - self._last_eviction >= NOTICE_QUIET_S:
            log.warning(
                "connection limit reached: closing the oldest connections that have not "
                "sent a whole request to make room",
                max_connections=self.max_connections,
                fix="nothing, if it passes; raise [server] max_connections (and the "
                "unit's LimitNOFILE=) if many legitimate clients stay connected",
            )
        self._last_eviction = now
