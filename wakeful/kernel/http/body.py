"""Reading a JSON request body without ever holding more than the cap, or waiting forever."""

from __future__ import annotations

from typing import Any

import anyio
from starlette.requests import ClientDisconnect, Request

from wakeful.kernel.http.errors import ApiError
from wakeful.kernel.http.json_limits import JsonRefused, loads_limited

# The scope key HostGuard sets from [server] body_timeout_s; the default covers
# an app served without it (tests that build the app alone).
BODY_TIMEOUT_KEY = "wakeful.body_timeout_s"
DEFAULT_BODY_TIMEOUT_S = 30.0
# Set by the server's protocol once the whole body has arrived (and is buffered):
# reading it then cannot wait, so it needs no deadline. Most webhook deliveries
# arrive in one segment with their head; the deadline's cancel scope was a tenth
# of their CPU time.
BODY_RECEIVED_KEY = "wakeful.body_received"


async def read_capped(request: Request, max_bytes: int) -> bytes:
    """The body, or 413 as soon as it is known to exceed ``max_bytes``, or 408 when
    it has not all arrived within the body deadline (a 0.5 B/s sender holds a
    connection and a task for as long as it likes otherwise)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "Content-Length must be a whole number of bytes")
        if int(declared) > max_bytes:
            raise _too_large(max_bytes)
    if request.scope.get(BODY_RECEIVED_KEY):
        return await _read_all(request, max_bytes)
    deadline_s = float(request.scope.get(BODY_TIMEOUT_KEY, DEFAULT_BODY_TIMEOUT_S))
    with anyio.move_on_after(deadline_s) as scope:
        body = await _read_all(request, max_bytes)
    if scope.cancelled_caught:
        raise ApiError(
            408,
            f"the request body did not arrive within {deadline_s:g} s "
            "([server] body_timeout_s); send it faster or in one piece",
            {"Connection": "close"},
        )
    return body


async def _read_all(request: Request, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        # Chunked bodies announce no length: count while reading and stop at the cap.
        async for chunk in request.stream():
            total += len(chunk)
            if total > max_bytes:
                raise _too_large(max_bytes)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(400, "the client disconnected before sending the whole body") from None
    return b"".join(chunks)


def _too_large(max_bytes: int) -> ApiError:
    return ApiError(413, f"request body is larger than the limit of {max_bytes} bytes")


async def read_json_object(request: Request, max_bytes: int) -> dict[str, Any]:
    raw = await read_capped(request, max_bytes)
    try:
        data = loads_limited(raw)
    except JsonRefused as exc:
        raise ApiError(400, str(exc)) from None
    if not isinstance(data, dict):
        raise ApiError(400, 'body must be a JSON object such as {"text": "hello"}')
    return data
