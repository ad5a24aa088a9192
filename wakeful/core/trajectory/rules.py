"""The five rules of the trajectory (SPEC §4), one method each.

Everything the agent loop writes to a session's trajectory goes through
:class:`TrajectoryWriter`, so each rule is enforced in exactly one place:

1. :meth:`TrajectoryWriter.record_assistant_message` — the moment it is complete.
2. :meth:`TrajectoryWriter.record_tool_result` — only when the call has finished.
3. :meth:`TrajectoryWriter.close_interrupted_calls` — placeholders for unfinished calls.
4. :meth:`TrajectoryWriter.discard_partial_output` — partial model output never lands:
   the text streamed so far is held in the writer's :class:`PartialOutput` for
   the step, and discarding it empties it and bars the step from being recorded.
5. :meth:`TrajectoryWriter.append_queued_batch` — queued events go in together.

And :meth:`TrajectoryWriter.repair_after_restart` runs the normalizer over
what a crash left and persists its placeholders, so they never change again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from wakeful.core.provider import ModelResponse
from wakeful.core.trajectory.normalizer import Normalized, normalize
from wakeful.core.trajectory.placeholders import (
    interrupted_placeholder,
    stopped_by_shutdown_placeholder,
    tool_message,
)
from wakeful.core.trajectory.rendering import is_parallel_note, render_batch
from wakeful.store.base import StoredEvent, TrajectoryStore

Message = dict[str, Any]
log = structlog.get_logger(__name__)

# Opens the note of events a closed session received and never handled.
UNHANDLED_NOTE = "[Not handled: this session was closed for good"


class CallInFlight(Protocol):
    """A tool call the loop started: what rules 2 and 3 need to know of it.

    A call is *taken* exactly once — by the trajectory (its result, or the final
    placeholder at shutdown, is its tool message) or by a late result (a placeholder
    promised that its outcome arrives as a ``tool.result`` event).
    """

    @property
    def call_id(self) -> str: ...

    @property
    def tool_name(self) -> str: ...

    def elapsed_s(self) -> float: ...

    def result_if_finished(self) -> str | None:
        """The result text once the call has really finished; None while it runs."""
        ...

    def take(self, *, late: bool) -> bool:
        """Claim the call (``late``: for a late result); False if it was taken already."""
        ...


@dataclass(frozen=True)
class Interruption:
    cause: str
    cancelled: bool  # True: the calls were told to stop; False: they go on in the background
    shutdown: bool = False  # the daemon itself is stopping: no late result will follow


class PartialOutputDiscarded(RuntimeError):
    """Something tried to record (or add to) a model step whose output was discarded."""


class PartialOutput:
    """The text one model step has streamed so far; the writer hands it out
    (:meth:`TrajectoryWriter.begin_model_step`) and alone may discard it."""

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self.discarded = False

    def append(self, text: str) -> None:
        if self.discarded:
            raise PartialOutputDiscarded("a discarded model step cannot stream more text")
        self._chunks.append(text)

    def text(self) -> str:
        return "".join(self._chunks)

    def _discard(self) -> int:
        chars = sum(map(len, self._chunks))
        self._chunks.clear()
        self.discarded = True
        return chars


class TrajectoryWriter:
    def __init__(self, store: TrajectoryStore, session: str) -> None:
        self.store = store
        self.session = session
        self.last_agent_at: datetime | None = None
        # The loop is the trajectory's only writer, so it keeps a copy rather
        # than re-reading the whole trajectory before every model request.
        self._messages: list[Message] | None = None
        self._step: PartialOutput | None = None  # the model step being streamed, if any

    async def messages(self) -> list[Message]:
        if self._messages is None:
            self._messages = await self.store.trajectory(self.session)
        return self._messages

    async def _append(self, messages: list[Message], meta: dict[str, Any] | None = None) -> None:
        cached = await self.messages()
        await self.store.append_messages(self.session, messages, meta=meta)
        cached.extend(messages)

    async def append_queued_batch(
        self, events: list[StoredEvent], total: int | None = None
    ) -> list[Message]:
        """Rule 5: events that waited are appended together, in one transaction
        with their removal from the queue, marked and summarised when several.
        ``total``: how many waited, when the batch is only the oldest of them."""
        messages = render_batch(events, self.last_agent_at, total)
        cached = await self.messages()
        await self.store.consume(
            self.session,
            [stored.event.id for stored in events],
            messages,
            meta={"event_ids": [stored.event.id for stored in events]},
        )
        cached.extend(messages)
        return messages

    async def record_unhandled(self, events: list[StoredEvent], cause: str) -> Message:
        """A closed session's events (it takes no more work): out of its queue, in one
        transaction with a note that names each and why it was not handled. Not rendered
        for a model: no model call follows."""
        listed = "; ".join(
            f"{stored.event.kind} {stored.event.id}: {stored.event.content.text[:200]}"
            for stored in events
        )
        message = {"role": "user", "content": f"{UNHANDLED_NOTE} ({cause}): {listed}"}
        ids = [stored.event.id for stored in events]
        cached = await self.messages()
        await self.store.consume(
            self.session, ids, [message], meta={"event_ids": ids, "unhandled": cause}
        )
        cached.append(message)
        return message

    def begin_model_step(self) -> PartialOutput:
        """Where the next model step's streamed text is held until it is whole."""
        self._step = PartialOutput()
        return self._step

    async def record_assistant_message(self, response: ModelResponse) -> Message:
        """Rule 1: the assistant message, with its reasoning and tool calls, as
        soon as it is whole — never for a step whose output was discarded."""
        if self._step is not None and self._step.discarded:
            raise PartialOutputDiscarded("the model step was interrupted; its output was discarded")
        self._step = None
        message = response.as_message()
        if not message.get("content") and not message.get("tool_calls"):
            # APIs reject an empty assistant turn; say plainly that it was empty.
            message["content"] = "(empty response)"
        await self._append([message], meta={"model": response.model})
        self.last_agent_at = datetime.now(UTC)
        return message

    async def record_tool_result(self, call: CallInFlight) -> bool:
        """Rule 2: a tool's result, written only once the call has really finished
        and only if nothing took the call first. False: not written (still running,
        or already answered by a placeholder)."""
        text = call.result_if_finished()
        if text is None or not call.take(late=False):
            return False
        await self._append([tool_message(call.call_id, text)])
        return True

    async def close_interrupted_calls(
        self,
        calls: Sequence[CallInFlight],
        interruption: Interruption,
        on_taken: Callable[[CallInFlight], None] = lambda call: None,
    ) -> list[CallInFlight]:
        """Rule 3: each unfinished call gets one honest placeholder, so the
        assistant message stays paired with results before anything else is added.
        A call that finished meanwhile gets its real result instead. Returns the
        calls that got a placeholder (their outcome is now a late result's, unless
        the daemon is stopping). ``on_taken`` runs for each as soon as it is taken,
        before the placeholders are written (the loop cancels the call there)."""
        closed: list[CallInFlight] = []
        for call in calls:
            if await self.record_tool_result(call):
                continue
            if call.take(late=not interruption.shutdown):
                on_taken(call)
                closed.append(call)
        messages = [tool_message(c.call_id, _placeholder_text(c, interruption)) for c in closed]
        if messages:
            await self._append(messages, meta={"placeholder": True})
        return closed

    def discard_partial_output(self, partial: PartialOutput, cause: str) -> None:
        """Rule 4: an interrupted stream is dropped whole; nothing of it is written,
        now or later (the step can no longer be recorded)."""
        log.info("model stream interrupted", discarded_chars=partial._discard(), cause=cause)

    async def repair_after_restart(self) -> Normalized:
        """Normalize what a crash left and persist the placeholders it needed."""
        self._messages = None
        normalized = normalize(await self.messages())
        if normalized.placeholders:
            await self._append(normalized.placeholders, meta={"placeholder": True})
            log.warning(
                "closed tool calls left open by a restart",
                placeholders=len(normalized.placeholders),
            )
        return normalized


def _placeholder_text(call: CallInFlight, interruption: Interruption) -> str:
    if interruption.shutdown:
        return stopped_by_shutdown_placeholder(
            tool=call.tool_name, call_id=call.call_id, elapsed_s=call.elapsed_s()
        )
    return interrupted_placeholder(
        tool=call.tool_name,
        call_id=call.call_id,
        elapsed_s=call.elapsed_s(),
        cause=interruption.cause,
        cancelled=interruption.cancelled,
    )


def needs_model_response(messages: list[Message]) -> bool:
    """True when the model owes a reply: the trajectory does not end with a
    final assistant message (one with no tool calls). Notes of questions answered
    in parallel after it owe nothing: they are context for the next run."""
    end = len(messages)
    while end and is_parallel_note(messages[end - 1]):
        end -= 1
    if not end:
        return False
    last = messages[end - 1]
    return not (last.get("role") == "assistant" and not last.get("tool_calls"))
