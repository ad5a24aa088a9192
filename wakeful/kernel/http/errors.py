"""Every error the API returns is JSON: ``{"error": "<what went wrong and the fix>"}``."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from wakeful.kernel.http.direct import DirectAnswer

# What a client learns of a bug; the detail stays in the server log.
INTERNAL_ERROR = "internal error; see the daemon's log"


class ApiError(HTTPException):
    """Raised anywhere in a handler; becomes a JSON error response."""

    def __init__(
        self, status_code: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(status_code=status_code, detail=message, headers=headers)


def error_response(
    status_code: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The error as the app's routes send it; the direct lane writes the same
    :class:`DirectAnswer` itself."""
    return answer_response(DirectAnswer.error(status_code, message, tuple((headers or {}).items())))


def answer_response(answer: DirectAnswer) -> Response:
    """A direct route's answer as a Starlette response: the same bytes."""
    return Response(
        answer.body, answer.status, headers=dict(answer.headers), media_type="application/json"
    )


async def http_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):
        return await server_error(request, exc)
    message = exc.detail
    if exc.status_code == 404 and not isinstance(exc, ApiError):
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif exc.status_code == 405 and not isinstance(exc, ApiError):
        message = f"method {request.method} is not allowed on {request.url.path}"
    return error_response(exc.status_code, message, exc.headers)


async def server_error(request: Request, exc: Exception) -> Response:
    return error_response(500, INTERNAL_ERROR)
