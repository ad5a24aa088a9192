"""How many events wait in one session's queue, known without asking the store.

The status bar of every model request says how many events wait for the next
safe point. Asking the store each cycle is a round trip (and a read of every
waiting event) for one number that the session loop already knows: it reads
the queue at each safe point anyway, to take the batch, and the dispatcher
tells it of every event it queues between two safe points
(:meth:`SessionLoop.notify` with the event's id). The count is those two
combined, so it is right on either store backend and after a restart (the
first safe point, or the first request, reads it from the store once).

Two races are closed here, not by callers: an event queued while the safe
point's read is under way is counted whether or not the read saw it, and the
dispatcher's word for an event the read already took does not count it again.
"""

from __future__ import annotations

from collections.abc import Iterable


class QueuedEvents:
    def __init__(self) -> None:
        self._waiting: set[str] = set()
        self._arrived_during_read: set[str] | None = None  # set while a read is under way
        self._just_taken: set[str] = set()  # taken at the latest safe point
        self.known = False  # False until the first read: then the count is the store's

    def __len__(self) -> int:
        return len(self._waiting)

    def begin_read(self) -> None:
        """The safe point starts reading the session's queue from the store."""
        self._arrived_during_read = set()

    def read(self, event_ids: Iterable[str]) -> None:
        """What the store said is waiting (ends the read begun with :meth:`begin_read`)."""
        arrived = self._arrived_during_read or set()
        self._arrived_during_read = None
        self._waiting = set(event_ids) | arrived
        self._just_taken = set()
        self.known = True

    def taken(self, event_ids: Iterable[str]) -> None:
        """These left the queue: consumed into the trajectory, or quarantined."""
        for event_id in event_ids:
            self._waiting.discard(event_id)
            self._just_taken.add(event_id)

    def just_took(self, event_id: str) -> bool:
        """The latest safe point took this event (a cancel arriving late is moot)."""
        return event_id in self._just_taken

    def queued(self, event_id: str) -> None:
        """The dispatcher put this event in the queue (or back into it)."""
        if event_id in self._just_taken:
            return  # its notice raced the read that took it
        self._waiting.add(event_id)
        if self._arrived_during_read is not None:
            self._arrived_during_read.add(event_id)
