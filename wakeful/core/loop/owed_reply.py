"""A reply the trajectory has but the outbox may not: the daemon died in between.

The loop records the assistant message, then hands its text to the outbox. A
SIGKILL between the two used to lose the reply for good (the model is not asked
again: the trajectory says it answered). The outbox key is therefore made of
the message's position in the trajectory, which a restart sees unchanged, and
at start the last assistant message is handed to the outbox again under that
key: a known key sends nothing, a missing one sends the owed reply.
"""

from __future__ import annotations

from wakeful.core.loop.deps import AgentOutbox
from wakeful.core.trajectory.rules import Message
from wakeful.kernel.events import Event
from wakeful.store.base import EventQueue, EventStatus

EMPTY_TURN = "(empty response)"  # what the writer records for a turn with no text


def reply_key(session: str, position: int) -> str:
    """The outbox key of the assistant message at ``position`` of ``session``'s trajectory."""
    return f"{session}:reply:at:{position}"


async def last_answered(store: EventQueue, session: str, pages: int = 20) -> Event | None:
    """The event the session's newest run answered, read back after a restart: the
    newest one taken into the trajectory (not a parallel answer's note). Without it
    a run a restart interrupted replied to the local chat, not to the Matrix room
    or Telegram chat the question came from (the loop's ``answering`` is memory)."""
    before = 0
    for _ in range(pages):
        page = await store.event_log_newest(session, before_seq=before)
        for stored in reversed(page.events):
            if stored.status is EventStatus.CONSUMED and stored.parallel_answer is None:
                return stored.event
        if not page.events or page.older == 0:
            return None
        before = page.events[0].seq
    return None


async def send_owed_reply(
    session: str, messages: list[Message], outbox: AgentOutbox, answering: Event | None = None
) -> None:
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str) and content and content != EMPTY_TURN:
            latest = await outbox.latest(session)
            # The session's newest message is this reply: sent already, under its key
            # or under the key an older daemon used (run id and call number), which a
            # restart cannot rebuild — so an upgrade does not send last replies again.
            if latest is not None and latest.text == content:
                return
            await outbox.send(
                session, content, key=reply_key(session, position), answering=answering
            )
        return
