"""The daemon's HTTP API: messages in, live feed and logs out (ARCHITECTURE.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from wakeful.core.context.session_context import ContextFull
from wakeful.core.feed_sse import EventStreamResponse, StreamRegistry
from wakeful.core.front_door import DaemonUnavailable, FrontDoor
from wakeful.core.outbox.service import Outbox
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import EventError, user_message
from wakeful.kernel.http.auth import TokenCheck
from wakeful.kernel.http.body import read_json_object
from wakeful.kernel.http.errors import ApiError, http_error, server_error
from wakeful.store.outbox.port import OutgoingMessages

MESSAGE_KINDS = (EventKind.USER_INPUT, EventKind.USER_INTERRUPT)
MAX_LOG_LIMIT = 1000


class Api:
    """The route handlers, sharing the daemon, the token check and the limits."""

    def __init__(
        self,
        daemon: FrontDoor,
        tokens: TokenCheck,
        max_body_bytes: int,
        heartbeat_s: float,
        outbox: Outbox | None = None,
    ) -> None:
        self.daemon = daemon
        self.outbox = outbox
        self.tokens = tokens
        self.max_body_bytes = max_body_bytes
        self.heartbeat_s = heartbeat_s
        self.streams = StreamRegistry()

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def post_message(self, request: Request) -> Response:
        credential = self.tokens.require(request)
        data = await read_json_object(request, self.max_body_bytes)
        event_id = _idempotency_key(data, request.headers.get("idempotency-key"))
        try:
            event = user_message(
                _text(data),
                session=_string(data, "session", "main"),
                channel="chat:web" if credential == "cookie" else "chat:api",
                kind=_kind(data),
                event_id=event_id,
            )
        except EventError as exc:
            raise ApiError(400, str(exc)) from None
        try:
            result = await self.daemon.submit(event)
        except DaemonUnavailable as exc:
            raise _unavailable(exc) from None
        return JSONResponse(
            {"event_id": result.event_id, "duplicate": result.duplicate}, status_code=202
        )

    async def stream(self, request: Request) -> Response:
        self.tokens.require(request, allow_query=True)
        session = request.path_params["session"]
        return EventStreamResponse(
            lambda: self.daemon.subscribe(session), self.streams, self.heartbeat_s
        )

    async def session_events(self, request: Request) -> Response:
        self.tokens.require(request)
        return await self._event_log(request, request.path_params["session"])

    async def all_events(self, request: Request) -> Response:
        self.tokens.require(request)
        return await self._event_log(request, request.query_params.get("session"))

    async def _event_log(self, request: Request, session: str | None) -> Response:
        """``?after=SEQ`` reads forward (oldest first, for following); ``?newest=1``
        (with ``before=SEQ`` to page back) the newest, and how many older ones remain."""
        limit = _int_param(request, "limit", 200, minimum=1, maximum=MAX_LOG_LIMIT)
        newest = request.query_params.get("newest") in {"1", "true", "yes"}
        try:
            if newest:
                before = _int_param(request, "before", 0, minimum=0)
                page = await self.daemon.event_log_newest(session, before_seq=before, limit=limit)
                return JSONResponse(page)
            after = _int_param(request, "after", 0, minimum=0)
            entries = await self.daemon.event_log(session, after_seq=after, limit=limit)
        except DaemonUnavailable as exc:
            raise _unavailable(exc) from None
        return JSONResponse({"events": entries})

    async def trajectory(self, request: Request) -> Response:
        self.tokens.require(request)
        try:
            full = request.query_params.get("full", "") in ("1", "true", "yes")
            messages = await self.daemon.trajectory(request.path_params["session"], full=full)
        except DaemonUnavailable as exc:
            raise _unavailable(exc) from None
        return JSONResponse({"session": request.path_params["session"], "messages": messages})

    async def next_request(self, request: Request) -> Response:
        """The exact body the session's next model call would post (no model is called)."""
        self.tokens.require(request)
        session = request.path_params["session"]
        try:
            body = await self.daemon.next_request(session)
            if body is None:
                known = ", ".join(await self.daemon.known_sessions()) or "none yet"
                raise ApiError(404, f"no session {session!r}; known sessions: {known}")
        except DaemonUnavailable as exc:
            raise _unavailable(exc) from None
        except ContextFull as exc:  # the next model call would fail the same way
            raise ApiError(409, f"no request can be built: {exc}") from None
        return JSONResponse({"session": session, "request": body})

    async def retry_event(self, request: Request) -> Response:
        self.tokens.require(request)
        event_id = request.path_params["event_id"]
        try:
            entry = await self.daemon.retry_event(event_id)
        except DaemonUnavailable as exc:
            raise _unavailable(exc) from None
        if entry is None:
            raise ApiError(
                404, f"event {event_id!r} is not quarantined (see `wakeful status`); nothing to do"
            )
        return JSONResponse({"event": entry})

    async def outbox_messages(self, request: Request) -> Response:
        """Unread messages (``?unread=1``), else the history after ``after``."""
        self.tokens.require(request)
        messages, session = self._outbox(), request.path_params["session"]
        if request.query_params.get("unread") in {"1", "true", "yes"}:
            found = await messages.unread(session)
        else:
            after = _int_param(request, "after", 0, minimum=0)
            limit = _int_param(request, "limit", 200, minimum=1, maximum=MAX_LOG_LIMIT)
            found = await messages.history(session, after=after, limit=limit)
        return JSONResponse({"session": session, "messages": [m.to_json() for m in found]})

    async def outbox_ack(self, request: Request) -> Response:
        """``{"up_to": id}`` and/or ``{"ids": [id, ...]}``: the client has shown these."""
        self.tokens.require(request)
        data = await read_json_object(request, self.max_body_bytes)
        up_to, ids = data.get("up_to"), data.get("ids", [])
        if up_to is not None and (not isinstance(up_to, int) or isinstance(up_to, bool)):
            raise ApiError(400, "field 'up_to' must be a message id, e.g. {\"up_to\": 12}")
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            raise ApiError(400, "field 'ids' must be a list of message ids, e.g. {\"ids\": [3]}")
        if up_to is None and not ids:
            raise ApiError(400, 'send {"up_to": id} or {"ids": [id, ...]}')
        count = await self._outbox().acknowledge(
            request.path_params["session"], up_to=up_to, ids=tuple(ids)
        )
        return JSONResponse({"acknowledged": count})

    def _outbox(self) -> OutgoingMessages:
        if self.outbox is None:
            raise ApiError(404, "this daemon has no outbox")
        return self.outbox.messages

    async def status(self, request: Request) -> Response:
        self.tokens.require(request)
        try:
            return JSONResponse(await self.daemon.status())
        except DaemonUnavailable as exc:
            raise _unavailable(exc) from None


def create_app(
    daemon: FrontDoor,
    *,
    admin_token: str,
    max_body_bytes: int,
    heartbeat_s: float = 15.0,
    extra_routes: Sequence[BaseRoute] = (),
    admin_routes: Sequence[Route] = (),
    outbox: Outbox | None = None,
) -> Starlette:
    """The ASGI app; ``app.state.streams.close_all()`` ends open event streams at shutdown.
    ``admin_routes`` (components' parts of the admin API) answer only with the admin token."""
    api = Api(daemon, TokenCheck(admin_token), max_body_bytes, heartbeat_s, outbox)
    routes: list[BaseRoute] = [
        *extra_routes,
        *(_admin_only(route, api.tokens) for route in admin_routes),
        Route("/healthz", api.healthz, methods=["GET"]),
        # /readyz and /metrics join here once the store reports readiness and counters.
        Route("/api/messages", api.post_message, methods=["POST"]),
        Route("/api/status", api.status, methods=["GET"]),
        Route("/api/events", api.all_events, methods=["GET"]),
        Route("/api/events/{event_id:path}/retry", api.retry_event, methods=["POST"]),
        Route("/api/sessions/{session:path}/events", api.session_events, methods=["GET"]),
        Route("/api/sessions/{session:path}/stream", api.stream, methods=["GET"]),
        Route("/api/sessions/{session:path}/trajectory", api.trajectory, methods=["GET"]),
        Route("/api/sessions/{session:path}/request", api.next_request, methods=["GET"]),
        Route("/api/sessions/{session:path}/outbox", api.outbox_messages, methods=["GET"]),
        Route("/api/sessions/{session:path}/outbox/ack", api.outbox_ack, methods=["POST"]),
    ]
    handlers: dict[Any, Any] = {ApiError: http_error, 404: http_error, 405: http_error}
    handlers[Exception] = server_error
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.streams = api.streams
    return app


def _admin_only(route: Route, tokens: TokenCheck) -> Route:
    endpoint = route.endpoint

    async def checked(request: Request) -> Response:
        tokens.require(request)
        response: Response = await endpoint(request)
        return response

    return Route(route.path, checked, methods=sorted(route.methods or ()), name=route.name)


def _unavailable(exc: DaemonUnavailable) -> ApiError:
    return ApiError(
        503, f"the daemon cannot take this now: {exc}", {"Retry-After": str(exc.retry_after_s)}
    )


def _string(data: dict[str, Any], name: str, default: str | None = None) -> str:
    value = data.get(name, default)
    if not isinstance(value, str):
        raise ApiError(400, f"field '{name}' must be a string")
    return value


def _text(data: dict[str, Any]) -> str:
    if "text" not in data:
        raise ApiError(400, 'field \'text\' is required, e.g. {"text": "hello"}')
    text = _string(data, "text")
    if not text.strip():
        raise ApiError(400, "field 'text' must not be empty")
    return text


def _kind(data: dict[str, Any]) -> str:
    kind = _string(data, "kind", EventKind.USER_INPUT)
    if kind not in MESSAGE_KINDS:
        raise ApiError(400, f"field 'kind' must be one of {', '.join(MESSAGE_KINDS)}")
    return kind


def _idempotency_key(data: dict[str, Any], header: str | None) -> str | None:
    body_id = _string(data, "id") if data.get("id") is not None else None
    if body_id is not None and header is not None and body_id != header:
        raise ApiError(400, "field 'id' and the Idempotency-Key header disagree; send one")
    return body_id if body_id is not None else header


def _int_param(
    request: Request, name: str, default: int, *, minimum: int, maximum: int | None = None
) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"query parameter '{name}' must be an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ApiError(400, f"query parameter '{name}' must be at least {minimum}{upper}")
    return value
