"""Connection-level limits uvicorn's options leave open (or leave to a parser not in use).

``timeout_keep_alive`` only starts after a response: a client that connects
and sends nothing (or drips its headers) kept its socket forever, and 1,100
such sockets exhausted the default fd limit with nothing logged. The
protocol below gives every connection a deadline to produce a request
whenever none is in flight, a short one for connections beyond the cap
(they could only get a 503). It caps the request head itself: uvicorn's
``h11_max_incomplete_event_size`` does nothing under httptools, and 6
connections sending endless headers grew the daemon to 2.65 GB. At the cap
it closes the oldest waiting connection instead of refusing the new one.
Most webhook deliveries skip ASGI: a direct route answers them here
(``wakeful.app.http.direct_lane``).
:func:`fd_headroom` lifts the soft fd limit above the cap where the hard
limit allows. ``limit_concurrency`` answers 503 but logs every refused
request; :func:`limit_notice` turns that into one line per burst.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, cast

import structlog
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from wakeful.app.http.admission import Admission
from wakeful.app.http.direct_lane import (
    DirectCycle,
    DirectLane,
    LaneRequest,
    internal_error,
    response,
)
from wakeful.app.http.one_write import HeadWithBody
from wakeful.kernel.http.body import BODY_RECEIVED_KEY
from wakeful.kernel.http.direct import DirectAnswer

log = structlog.get_logger(__name__)

UVICORN_LIMIT_MESSAGE = "Exceeded concurrency limit."
BURST_QUIET_S = 10.0  # a refusal after this much quiet starts a new burst
OVER_CAP_IDLE_S = 1.0  # a connection beyond the cap gets this long to send a request
# Largest request head (request line + headers) read before answering 431.
MAX_HEAD_BYTES = 16 * 1024
# Descriptors beyond the connections: the store, logs, shell tasks' pipes, the model client.
FD_RESERVE = 256


class GuardedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request deadline, a head limit and admission.

    * A connection with no request in flight for ``timeout_keep_alive`` s is closed.
    * A request head (request line + headers) over ``MAX_HEAD_BYTES`` gets 431 and
      the connection is closed. llhttp has no such limit of its own and httptools
      buffers a header until its line ends, so the bytes are counted here, as they
      arrive, before the parser sees them.
    * At the cap, the oldest connection with no request in flight makes room
      (:mod:`wakeful.app.http.admission`). ``admission`` and ``max_connections``
      are set on the subclass :func:`guarded_protocol` makes for each server.
    * A request a direct route takes (``lane``) is answered without ASGI; one whose
      body does not come whole with its head goes the ASGI way after all.
    """

    admission: ClassVar[Admission]
    max_connections: ClassVar[int]
    lane: ClassVar[DirectLane | None] = None
    _lane_request: LaneRequest | None = None  # taken into the lane, body still coming
    _request_deadline: asyncio.TimerHandle | None = None
    _deadline_at = 0.0  # loop time by which a request must have started
    _head_bytes = 0  # bytes of the current request head received so far
    _in_head = True  # no complete head since the last message ended
    _closed_for_newcomer = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.limit_concurrency = None  # see on_headers_complete
        admission = self.admission
        while len(self.connections) - admission.closing > self.max_connections:
            if not admission.make_room():
                break
        over_cap = len(self.connections) - admission.closing > self.max_connections
        admission.waiting(self, fresh=True)
        self._arm_request_deadline(OVER_CAP_IDLE_S if over_cap else None)

    def data_received(self, data: bytes) -> None:
        self._feed(data)
        if self._lane_request is not None and not self.transport.is_closing():
            # The body did not all come with the head: the ASGI path reads the rest,
            # with its body deadline (a sender dripping its body holds no lane).
            self._leave_lane(self._lane_request)

    def _feed(self, data: bytes) -> None:
        if self._in_head and self._head_bytes + len(data) > MAX_HEAD_BYTES:
            # Feed only what the limit allows: if the head ends inside it, the rest
            # is body (or the next request) and goes on normally.
            room = MAX_HEAD_BYTES - self._head_bytes
            self._head_bytes = MAX_HEAD_BYTES
            if room > 0:
                super().data_received(data[:room])
            if self.transport.is_closing():
                return
            if self._head_still_open():
                self._refuse_head()
                return
            data = data[room:]
        elif self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)

    def _head_still_open(self) -> bool:
        # A method, not the attribute: the parser's callbacks change it during a feed.
        return self._in_head

    def on_headers_complete(self) -> None:
        self._in_head = False
        admission = self.admission
        admission.busy(self)  # not a candidate for the room made below
        # uvicorn answers 503 when ``limit_concurrency`` is reached; decide here instead,
        # not counting connections admission closed whose connection_lost has not run,
        # and after trying once more to make room (some may be waiting by now).
        while len(self.connections) - admission.closing > self.max_connections:
            if not admission.make_room():
                break
        open_now = len(self.connections) - admission.closing
        busy = open_now > self.max_connections or len(self.tasks) >= self.max_connections
        admission.receiving_body(self)  # until on_message_complete (same feed if no body)
        self.limit_concurrency = 0 if busy else None
        lane = self.lane
        if lane is not None and not busy and (self.cycle is None or self.cycle.response_complete):
            parser = self.parser
            self._lane_request = lane.take(
                parser.get_method(),
                self.url,
                self.headers,
                parser.should_keep_alive() and parser.get_http_version() != "1.0",
                self.server,
            )
            if self._lane_request is not None:
                return
        self._start_cycle()

    def _start_cycle(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not before:  # a new request (not an upgrade)
            cycle.transport = HeadWithBody(self.transport, self.loop)

    def _leave_lane(self, request: LaneRequest) -> None:
        self._lane_request = None
        self._start_cycle()
        if request.chunks:
            super().on_body(request.body())

    def on_body(self, body: bytes) -> None:
        request = self._lane_request
        if request is None:
            super().on_body(body)
        else:  # no more than its Content-Length, which the route accepted
            request.chunks.append(body)

    def on_message_complete(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self.admission.busy(self)
        request = self._lane_request
        if request is not None:
            self._lane_request = None
            self._answer_in_lane(request)
            return
        # The whole body is buffered: reading it cannot wait (wakeful.kernel.http.body).
        cast("dict[str, object]", self.scope)[BODY_RECEIVED_KEY] = True
        super().on_message_complete()

    def _answer_in_lane(self, request: LaneRequest) -> None:
        """As uvicorn starts a request's ASGI task: the server's tasks own it (a graceful
        shutdown waits for it, then cancels it)."""
        cycle = DirectCycle(request.keep_alive)
        self.cycle = cycle  # type: ignore[assignment]  # uvicorn reads only its flags
        task = self.loop.create_task(self._answer(request, cycle))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    async def _answer(self, request: LaneRequest, cycle: DirectCycle) -> None:
        try:
            answer = await request.route.answer(request.rest, request.headers, request.body())
        except Exception:
            # As the app's ASGI path: the client gets the JSON 500, the log the traceback,
            # and then the connection closes.
            log.exception("direct route failed", path=request.route.prefix.decode() + request.rest)
            self._respond(cycle, internal_error(), close=True)
        else:
            self._respond(cycle, answer, close=not cycle.keep_alive)

    def _respond(self, cycle: DirectCycle, answer: DirectAnswer, *, close: bool) -> None:
        if cycle.disconnected or self.transport.is_closing():
            return  # lost (uvicorn marks only the newest request, if one is pipelined)
        self.transport.write(response(answer, cycle.keep_alive))
        cycle.response_complete = True
        if close:
            self.transport.close()
        self.on_response_complete()

    def on_response_complete(self) -> None:
        # uvicorn's, less its keep-alive timer: the request deadline armed below closes
        # the connection after the same ``timeout_keep_alive`` (one timer, not two, per
        # request on the webhook path).
        self.server_state.total_requests += 1
        if not self.transport.is_closing():
            self.flow.resume_reading()
            if self.pipeline:  # the next pipelined request, in order
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)
            elif self.cycle is None or self.cycle.response_complete:
                self.admission.waiting(self, fresh=False)
        self._arm_request_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._request_deadline is not None:
            self._request_deadline.cancel()
            self._request_deadline = None
        self.admission.busy(self)
        if self._closed_for_newcomer:
            self._closed_for_newcomer = False
            self.admission.closing -= 1
        super().connection_lost(exc)

    def close_for_newcomer(self) -> bool:
        if self.transport.is_closing():
            return False
        self._closed_for_newcomer = True
        self.transport.close()
        return True

    def _refuse_head(self) -> None:
        body = (
            b'{"error": "request head (request line and headers) larger than '
            + str(MAX_HEAD_BYTES).encode()
            + b' bytes; send fewer or shorter headers"}'
        )
        self.transport.write(
            STATUS_LINE[431]
            + b"content-type: application/json\r\ncontent-length: "
            + str(len(body)).encode()
            + b"\r\nconnection: close\r\n\r\n"
            + body
        )
        self.transport.close()

    def _arm_request_deadline(self, after_s: float | None = None) -> None:
        """The connection closes unless a request starts within ``after_s`` (default
        ``timeout_keep_alive``). Moving a deadline later, as each response does, only
        records it: the timer already set finds it moved when it fires, and waits on."""
        at = self.loop.time() + (self.timeout_keep_alive if after_s is None else after_s)
        self._deadline_at = at
        timer = self._request_deadline
        if timer is not None:
            if timer.when() <= at:
                return
            timer.cancel()
        self._request_deadline = self.loop.call_at(at, self._request_deadline_passed)

    def _request_deadline_passed(self) -> None:
        self._request_deadline = None
        if self.loop.time() < self._deadline_at:  # moved later meanwhile
            self._request_deadline = self.loop.call_at(
                self._deadline_at, self._request_deadline_passed
            )
            return
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing():
            self.transport.close()


def guarded_protocol(
    max_connections: int, lane: DirectLane | None = None
) -> type[GuardedHttpTools]:
    """The protocol class for one server: its own admission state and cap, and the
    direct routes it answers itself."""

    class ServerProtocol(GuardedHttpTools):
        pass

    ServerProtocol.admission = Admission(max_connections)
    ServerProtocol.max_connections = max_connections
    ServerProtocol.lane = lane
    return ServerProtocol


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
