"""What the page asks of the daemon beyond the admin API: its session, its live feed,
model calls, and cancelling a background task."""

from __future__ import annotations

import dataclasses

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wakeful.core.components.context import Registrations
from wakeful.core.feed import ALL_SESSIONS, Feed
from wakeful.core.feed_sse import EventStreamResponse, StreamRegistry
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.kernel.http.auth import TokenCheck
from wakeful.kernel.http.errors import ApiError
from wakeful.store.base import Store

# Keep-alive comments at most this often: an idle page must not keep the daemon busy.
HEARTBEAT_S = 15.0
RECONNECT_MS = 1000
MODEL_CALLS_SHOWN = 100


class PageApi:
    def __init__(
        self, tokens: TokenCheck, feed: Feed, store: Store, registrations: Registrations
    ) -> None:
        self.tokens = tokens
        self.feed = feed
        self.store = store
        self.registrations = registrations
        self.streams = StreamRegistry()

    async def session(self, request: Request) -> Response:
        """The page's CSRF token (it cannot read its HttpOnly cookie)."""
        self.tokens.require(request)
        session_id = self.tokens.web_session(request)
        csrf = self.tokens.sessions.csrf_token(session_id) if session_id else None
        return JSONResponse({"csrf": csrf}, headers={"cache-control": "no-store"})

    async def stream(self, request: Request) -> Response:
        """Every session's feed on one connection; ``Last-Event-ID`` resumes it."""
        self.tokens.require(request)
        resume = request.headers.get("last-event-id") or request.query_params.get("after")
        return EventStreamResponse(
            lambda: self.feed.subscribe(ALL_SESSIONS, resume_after=resume),
            self.streams,
            HEARTBEAT_S,
            retry_ms=RECONNECT_MS,
        )

    async def model_calls(self, request: Request) -> Response:
        self.tokens.require(request)
        session = request.path_params["session"]
        calls = await self.store.model_calls(session, MODEL_CALLS_SHOWN)
        return JSONResponse({"session": session, "calls": [dataclasses.asdict(c) for c in calls]})

    async def cancel_task(self, request: Request) -> Response:
        """Cancel a component's background task (a shell command) like ``cancel_task`` does."""
        self.tokens.require(request)
        session, task_id = request.path_params["session"], request.path_params["task_id"]
        view = CombinedTaskView([make(session) for make in self.registrations.task_views])
        found = await view.cancel(task_id)
        if found is None:
            raise ApiError(
                404,
                f"no background task {task_id!r} in session {session!r}; "
                "see the tasks in `wakeful status`",
            )
        return JSONResponse({"task": found})
