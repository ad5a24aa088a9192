"""Reading a JSON request body without ever holding more than the cap."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect, Request

from wakeful.daemon.http.errors import ApiError


async def read_capped(request: Request, max_bytes: int) -> bytes:
    """The body, or 413 as soon as it is known to exceed ``max_bytes``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "Content-Length must be a whole number of bytes")
        if int(declared) > max_bytes:
            raise _too_large(max_bytes)
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
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, 'body must be a JSON object such as {"text": "hello"}')
    return data
