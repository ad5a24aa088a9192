"""One streamed model call, the same for every provider.

Open the stream, fold each event into the provider's accumulator (passing the
reply text on as it comes), hang up in a shielded ``finally`` and translate
whatever failed (wakeful/llm/error_mapping.py). The hang-up is what makes a
cancelled caller stop the server at once (SPEC §4 rule 4): the partial reply
is never returned, so it cannot reach the trajectory. A provider keeps only
how it opens its stream and how its events add up.

Two limits bound a call. The longest silence (``[llm] read_timeout_s``) is
the SDK's per-read timeout, so it holds while waiting for the answer and
between chunks. The whole call (``[llm] timeout_s``, retries included) is a
deadline here: a model that keeps streaming resets every per-read timeout,
and without it would hold its session for as long as it talks.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar

import anyio

from wakeful.core.provider import DeltaCallback, ModelResponse
from wakeful.llm.error_mapping import EndpointErrors

CLOSE_TIMEOUT_S = 2.0  # a server that does not let go is left behind, not waited for

Event = TypeVar("Event")
EventOut = TypeVar("EventOut", covariant=True)
EventIn = TypeVar("EventIn", contravariant=True)


class ReplyStream(Protocol[EventOut]):
    """An SDK's streamed response (both SDKs' ``AsyncStream``)."""

    def __aiter__(self) -> AsyncIterator[EventOut]: ...

    async def close(self) -> None: ...


class EventAccumulator(Protocol[EventIn]):
    """Folds one provider's stream events into one reply."""

    def add(self, event: EventIn) -> str:
        """Take one event; return the reply text it adds (may be empty)."""
        ...

    def response(self, requested_model: str, latency_s: float) -> ModelResponse: ...


async def stream_reply(
    open_stream: Callable[[], Awaitable[ReplyStream[Event]]],
    accumulator: EventAccumulator[Event],
    requested_model: str,
    on_delta: DeltaCallback | None,
    errors: EndpointErrors,
    deadline_s: float,
) -> ModelResponse:
    """The whole reply of one call within ``deadline_s``; a failure raised as ``errors``
    translates it."""
    started = time.monotonic()
    with anyio.move_on_after(deadline_s) as whole:
        try:
            stream = await open_stream()
            try:
                async for event in stream:
                    added = accumulator.add(event)
                    if added and on_delta is not None:
                        await on_delta(added)
            finally:
                await _hang_up(stream)
        except errors.caught as exc:
            raise errors.translate(exc) from exc
        return accumulator.response(requested_model, time.monotonic() - started)
    # Only our own deadline lands here: a caller's cancellation passes through the scope.
    assert whole.cancelled_caught
    raise errors.past_deadline(deadline_s)


async def _hang_up(stream: ReplyStream[object]) -> None:
    # Shielded: a cancelled caller must still close the connection, or the
    # server keeps generating (and billing) for nobody.
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
        await stream.close()
