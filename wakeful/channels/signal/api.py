"""The signal-cli daemon's HTTP interface, on plain httpx: JSON-RPC calls and the event stream.

``POST /api/v1/rpc`` takes one JSON-RPC 2.0 request and answers its response
(always HTTP 200, a refusal is the response's ``error``); ``GET /api/v1/events``
is a Server-Sent Events stream of ``receive`` events, each with an ``id``:
signal-cli keeps the last 1000 and, given the id last handled in a
``Last-Event-ID`` header, first sends the ones after it (signal-cli-jsonrpc(5)).

signal-cli's own error codes (its SignalJsonRpcCommandHandler): -1 a user error
(unknown recipient, not a group member), -3 an I/O error talking to Signal,
-4 an untrusted identity key, -5 rate limited; plus JSON-RPC's -32xxx.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

RPC_PATH = "/api/v1/rpc"
EVENTS_PATH = "/api/v1/events"
IO_ERROR = -3
UNTRUSTED_KEY = -4
RATE_LIMITED = -5
INTERNAL_ERROR = -32603
# signal-cli sends a keep-alive comment every 15 s: a stream silent for much longer is dead.
STREAM_READ_TIMEOUT_S = 60.0


class SignalError(Exception):
    """The daemon refused a call (``code`` from its JSON-RPC error), or could not be
    reached (``code`` 0)."""

    def __init__(self, code: int, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        """Worth trying again: unreachable, Signal's servers failing, rate limited, a crash."""
        return self.code in (0, IO_ERROR, RATE_LIMITED, INTERNAL_ERROR)


@dataclass(frozen=True)
class StreamEvent:
    """One Server-Sent Event: its id (signal-cli's cursor), its type and its data."""

    id: str | None
    event: str
    data: str


def _retry_after(error: dict[str, Any]) -> float | None:
    """A rate limit's wait, where signal-cli says it: a send's per-recipient results."""
    data = error.get("data")
    response = data.get("response") if isinstance(data, dict) else None
    results = response.get("results") if isinstance(response, dict) else None
    waits = [
        float(r["retryAfterSeconds"])
        for r in results or []
        if isinstance(r, dict) and isinstance(r.get("retryAfterSeconds"), int | float)
    ]
    return max(waits) if waits else None


def request_body(method: str, params: dict[str, Any], rid: int, account: str | None) -> Any:
    if account is not None:
        params = {**params, "account": account}
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": rid}


def response_result(body: Any) -> Any:
    """A JSON-RPC response's result; its error as a SignalError."""
    if not isinstance(body, dict):
        raise SignalError(INTERNAL_ERROR, "signal-cli answered something not a JSON object")
    error = body.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        raise SignalError(
            code if isinstance(code, int) else INTERNAL_ERROR,
            str(error.get("message") or "")[:300],
            _retry_after(error),
        )
    return body.get("result")


OnOpen = Callable[[], None]
Handle = Callable[[StreamEvent], Awaitable[None]]


class DaemonApi(Protocol):
    """What the channel needs of the daemon, whichever way it is reached."""

    url: str

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """One JSON-RPC call; its result, or SignalError."""
        ...

    async def listen(self, last_event_id: str | None, on_open: OnOpen, handle: Handle) -> None:
        """Receive events until the connection ends: raises SignalError then."""
        ...

    async def aclose(self) -> None: ...


class SignalApi:
    """One daemon's calls and event stream, over HTTP (``daemon --http``)."""

    def __init__(self, url: str, *, account: str | None, token: str | None) -> None:
        self.url = url
        self._account = account
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(
            base_url=url, headers=headers, timeout=httpx.Timeout(30.0, connect=10.0)
        )
        self._ids = itertools.count(1)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        request = request_body(method, params, next(self._ids), self._account)
        try:
            response = await self._http.post(RPC_PATH, json=request)
        except httpx.HTTPError as exc:  # refused, reset, timed out: the daemon may be restarting
            raise SignalError(
                0, f"signal-cli did not answer: {type(exc).__name__}: {exc}"
            ) from None
        if response.status_code != 200:
            raise SignalError(0, f"signal-cli answered HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise SignalError(INTERNAL_ERROR, "signal-cli answered something not JSON") from None
        return response_result(body)

    async def listen(self, last_event_id: str | None, on_open: OnOpen, handle: Handle) -> None:
        """Hand each event of the stream to ``handle`` until the stream ends (SignalError)."""
        async for event in self.events(last_event_id, on_open):
            await handle(event)

    async def events(
        self, last_event_id: str | None, on_open: OnOpen = lambda: None
    ) -> AsyncIterator[StreamEvent]:
        """The event stream from after ``last_event_id`` until it ends (SignalError);
        ``on_open`` is called once the daemon has accepted the stream."""
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        timeout = httpx.Timeout(STREAM_READ_TIMEOUT_S, connect=10.0)
        try:
            async with self._http.stream(
                "GET", EVENTS_PATH, headers=headers, timeout=timeout
            ) as response:
                if response.status_code != 200:
                    raise SignalError(0, f"{EVENTS_PATH} answered HTTP {response.status_code}")
                on_open()
                async for event in _parse_sse(response.aiter_lines()):
                    yield event
        except httpx.HTTPError as exc:
            raise SignalError(0, f"event stream broke: {type(exc).__name__}: {exc}") from None
        raise SignalError(0, "signal-cli closed the event stream")


async def _parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[StreamEvent]:
    """Server-Sent Events as the HTML standard defines them (the parts signal-cli uses)."""
    event_id: str | None = None
    kind, data = "", list[str]()
    async for line in lines:
        if not line:
            if data:
                yield StreamEvent(event_id, kind or "message", "\n".join(data))
            kind, data = "", []
            continue
        if line.startswith(":"):
            continue  # a keep-alive comment
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            kind = value
        elif field == "id" and "\0" not in value:
            event_id = value  # stays until the next id, as the standard says


def receive_params(event: StreamEvent) -> dict[str, Any] | None:
    """The ``{"envelope": …, "account": …}`` of a ``receive`` event; None for anything else.
    (A JSON-RPC notification around it, as the socket modes send, is unwrapped too.)"""
    if event.event not in ("receive", "message"):
        return None
    try:
        data = json.loads(event.data)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("params"), dict):
        data = data["params"]  # a notification, as --tcp and --socket send them
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]  # a subscription's (subscribeReceive, --receive-mode manual)
    return data if isinstance(data, dict) and isinstance(data.get("envelope"), dict) else None
