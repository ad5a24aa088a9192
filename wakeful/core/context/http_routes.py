"""The operator's HTTP side of the context budget, behind the admin token.

- ``POST /api/sessions/{session}/context/reset`` — close the session's compaction
  breaker (see ``breaker.py``): its next over-budget request may compact at once.

`wakeful context reset SESSION` calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wakeful.core.context.session_context import SessionContext
from wakeful.kernel.http.errors import ApiError


def context_routes(
    known_sessions: Callable[[], Awaitable[list[str]]],
    context_of: Callable[[str], SessionContext],
) -> list[Route]:
    async def reset(request: Request) -> Response:
        session = request.path_params["session"]
        known = await known_sessions()
        if session not in known:
            raise ApiError(404, f"no session {session!r}; known sessions: {', '.join(known)}")
        had_failures = await context_of(session).reset_breaker()
        return JSONResponse({"session": session, "had_failures": had_failures})

    return [Route("/api/sessions/{session}/context/reset", reset, methods=["POST"])]
