"""The parallel strategy (SPEC §5): a side session answers a quick question
at once, from a snapshot of the main trajectory, with read-only tools and a
tight budget. The main loop then sees the question and the answer together
at its next safe point, marked as handled in parallel.

If the side session cannot answer in budget, the event falls back to the
queue — it is never dropped.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog

from wakeful.core.loop.session_loop import SessionLoop
from wakeful.core.provider import ModelRequest, ProviderError, ToolCall
from wakeful.core.router.decision import Strategy
from wakeful.core.tool import ToolContext
from wakeful.core.trajectory.normalizer import normalize
from wakeful.core.trajectory.placeholders import tool_message
from wakeful.kernel.events import Event
from wakeful.store.base import EventStatus, StoredEvent

log = structlog.get_logger(__name__)

SIDE_QUESTION_NOTE = (
    "[Side question, answered in parallel while your main task continues. Answer it "
    "briefly and directly. Only read-only tools are available here; do not continue "
    "or change the main task.]"
)

Message = dict[str, Any]


def side_request_messages(
    system_prompt: str, main: list[Message], side: list[Message]
) -> tuple[list[Message], dict[str, str]]:
    """One side-session request: the main trajectory and the side turns, through
    the normalizer like every request, and the main task's running calls.

    A step whose tools are still running is cut off rather than given
    placeholders: the side session must not make the main task look interrupted.
    """
    normalized = normalize([*main, *side], cut_unfinished=True)
    system = {"role": "system", "content": system_prompt}
    return [system, *normalized.messages], normalized.unfinished


def running_note(unfinished: dict[str, str]) -> str:
    if not unfinished:
        return ""
    return "The main task is currently running: " + ", ".join(sorted(set(unfinished.values())))


async def answer_in_parallel(loop: SessionLoop, stored: StoredEvent) -> None:
    """Answer now; hand question and answer to the main loop; fall back to queue."""
    deps = loop.deps
    event = stored.event
    try:
        with anyio.fail_after(deps.limits.parallel_budget_s):
            answer = await _side_session(loop, event)
    except (TimeoutError, ProviderError) as exc:
        reason = f"parallel answer failed ({exc or 'out of time'}); queued instead"
        log.warning("parallel fallback", event_id=event.id, reason=reason)
        await deps.store.set_route(event.id, EventStatus.PENDING, Strategy.QUEUE, reason)
        loop.notify(event.id)
        return
    await deps.store.set_parallel_answer(event.id, answer)
    loop.notify(event.id)


async def _side_session(loop: SessionLoop, event: Event) -> str:
    deps, question = loop.deps, event.content.text
    # The request carries the session's full tool list so the prompt prefix is
    # byte-identical to the main loop's (cache hits) and past calls stay valid;
    # only the read-only tools are actually run.
    surface = deps.surface  # resident schemas + what the session loaded, when deferring
    allowed = {tool["function"]["name"] for tool in deps.tools.definitions(read_only=True)}
    # A copy: the main loop goes on appending to its trajectory meanwhile.
    main = list(await loop.writer.messages())
    prompt = await deps.prompts.for_session(loop.session)  # the main loop's: same prefix
    _, running = side_request_messages(prompt, main, [])
    allowed_note = "Tools you may use here: " + ", ".join(sorted(allowed))
    ask = "\n".join(
        filter(None, [SIDE_QUESTION_NOTE, allowed_note, running_note(running), question])
    )
    side: list[Message] = [{"role": "user", "content": ask}]
    replies: list[str] = []
    for _ in range(deps.limits.parallel_max_model_calls):
        messages, _ = side_request_messages(prompt, main, side)
        # Read again each step: a deferred tool called in the step before is loaded now,
        # and the call in the history must find its schema in the array.
        tools = await surface.tools_for(loop.session) if surface else deps.tools.definitions()
        response = await deps.provider.complete(ModelRequest(messages=messages, tools=tools))
        if not response.tool_calls:
            if response.content and response.content not in replies:
                # Keyed by the question, so a retried side answer is not sent twice,
                # and sent where the question came from.
                key = f"{loop.session}:side:{event.id}:{len(replies)}"
                await deps.outbox.send(loop.session, response.content, key=key, answering=event)
                replies.append(response.content)
            return "\n".join(replies) or "(no answer)"
        side.append(response.as_message())
        if surface is not None:  # as in the main loop: each call finds its schema next time
            await surface.load(loop.session, [call.name for call in response.tool_calls])
        for call in response.tool_calls:
            side.append(
                tool_message(call.id, await _side_tool_result(loop, call, allowed, replies, event))
            )
    return "\n".join(replies) or "(the side session ran out of model calls)"


async def _side_tool_result(
    loop: SessionLoop, call: ToolCall, allowed: set[str], replies: list[str], event: Event
) -> str:
    if call.name not in allowed:
        return f"{call.name} is not available in a side session (read-only tools only)."
    context = _side_context(loop, call.id, replies, event)
    return (await loop.deps.tools.execute(call.name, call.arguments, context)).text


def _side_context(loop: SessionLoop, call_id: str, replies: list[str], event: Event) -> ToolContext:
    return loop.tool_context(call_id, _SideOutbox(loop, replies, event))


class _SideOutbox:
    """The side session's messages go out like any other, and become its answer."""

    def __init__(self, loop: SessionLoop, replies: list[str], event: Event) -> None:
        self._loop = loop
        self._replies = replies
        self._event = event  # the side question: where its answers go

    async def send(self, text: str, *, key: str) -> str:
        self._replies.append(text)
        return await self._loop.deps.outbox.send_and_report(
            self._loop.session, text, key=key, answering=self._event
        )

    async def notify(self, text: str, *, urgency: str, key: str) -> str:
        return await self._loop.deps.outbox.notify_and_report(
            self._loop.session, text, urgency=urgency, key=key
        )
