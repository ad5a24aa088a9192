"""A cancel that reaches the owner after its event was taken is logged and let go.

The event and its cancel travel apart in a fleet (the events stream, the owner's control
stream). Seen on a loaded machine (the suite on two workers): the cancel came after the
owner's safe point took "please cancel the meeting", and logging that raised a TypeError
(structlog's ``event`` keyword is the message itself), which ended the owner's fleet
reader and so the daemon (tests/test_fleet_approvals.py timed out).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from wakeful.core.fleet_port import interrupt_unless_taken
from wakeful.core.loop.queued_events import QueuedEvents


@dataclass
class Loop:
    """What ``interrupt_unless_taken`` uses of a loop: its queue's bookkeeping, its interrupt."""

    queued: QueuedEvents = field(default_factory=QueuedEvents)
    interrupts: list[str] = field(default_factory=list)

    def interrupt(self, cause: str, *, stop_tools: bool) -> None:
        self.interrupts.append(cause)


def test_a_cancel_for_an_event_already_taken_interrupts_nothing() -> None:
    loop = Loop()
    loop.queued.read(["e1"])
    loop.queued.taken(["e1"])  # the safe point took the "stop" message itself
    with structlog.testing.capture_logs() as logs:
        interrupt_unless_taken(loop, "the message asks to stop", False, "e1")  # type: ignore[arg-type]
    assert loop.interrupts == []  # the answer to the "stop" is not cut short
    assert [(e["event"], e["event_id"]) for e in logs] == [
        ("cancel came after its event was taken; nothing to interrupt", "e1")
    ]


def test_a_cancel_for_an_event_still_waiting_interrupts_the_loop() -> None:
    loop = Loop()
    loop.queued.read([])
    interrupt_unless_taken(loop, "the message asks to stop", False, "e2")  # type: ignore[arg-type]
    assert loop.interrupts == ["the message asks to stop"]
