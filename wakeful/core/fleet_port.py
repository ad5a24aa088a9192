"""What the core needs of a fleet (several daemons sharing one Redis store).

The core knows no Redis: the dispatcher and the session registry are given this
port at construction (``wakeful.store.fleet.sessions.RedisFleet`` implements it), and
a single daemon is given none.
"""

from __future__ import annotations

from typing import Protocol

import structlog

from wakeful.core.loop.session_loop import SessionLoop

log = structlog.get_logger(__name__)


class FleetPort(Protocol):
    me: str  # this daemon's id in the fleet

    async def tell_owner(
        self, session: str, op: str, cause: str, stop_tools: bool, event_id: str = ""
    ) -> str | None:
        """A control message to the session's owner; the owner, or None if it has none."""
        ...

    def let_go(self, session: str) -> None:
        """This daemon no longer runs the session's loop: forget its lease token."""
        ...


def interrupt_unless_taken(loop: SessionLoop, cause: str, stop_tools: bool, event_id: str) -> None:
    """A cancel decided for ``event_id``, for a loop of this daemon, that travelled
    apart from its event (another daemon's dispatcher, or this one's after a round
    trip through Redis). The loop may have taken the event at its latest safe point
    already: the model is being asked with it, and an interrupt now would cut short
    the answer to the "stop" itself. An idle loop needs no check: its next safe point,
    which the interrupt brings, clears it."""
    if event_id and loop.queued.just_took(event_id):
        log.info("cancel came after its event was taken; nothing to interrupt", event_id=event_id)
        return
    loop.interrupt(cause, stop_tools=stop_tools)
