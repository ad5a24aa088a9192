"""The outgoing-message port: what every backend of the outbox offers."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Protocol

from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.states import DeliveryState


class OutgoingMessages(Protocol):
    async def add(self, message: NewMessage) -> OutgoingMessage:
        """Store ``message`` as pending; the same key again returns the first record."""
        ...

    async def add_claimed(self, message: NewMessage) -> tuple[OutgoingMessage, bool]:
        """Like ``add``, but a new message is stored already claimed (``sending``, one
        attempt) in the same write — one commit before the channel instead of two.
        True when this call created and claimed it; else the existing record."""
        ...

    async def get(self, message_id: int) -> OutgoingMessage | None: ...

    async def pending(self, limit: int = 100) -> list[OutgoingMessage]:
        """Pending messages of every session, oldest first (the deliverer's queue)."""
        ...

    async def move(
        self,
        message_id: int,
        old: DeliveryState,
        new: DeliveryState,
        *,
        error: str = "",
    ) -> OutgoingMessage | None:
        """Compare-and-set the state (``sending`` counts an attempt); None if it was
        not in ``old`` (another claim won, or it is gone)."""
        ...

    async def mark_interrupted(self, resend: Collection[str] = ()) -> list[OutgoingMessage]:
        """At start: every message left ``sending`` becomes ``unknown`` (never resent),
        except on the channels named in ``resend``, which drop a repeated send
        themselves (Matrix's txnId): there it is ``pending`` again, to be sent again."""
        ...

    async def watch_claims(
        self, resend: Collection[str], settled: Callable[[list[OutgoingMessage]], None]
    ) -> None:
        """While the deliverer runs: where several daemons share the outbox, keep this
        daemon's claims its own and settle (as ``mark_interrupted`` does) those of daemons
        that are gone, reporting them to ``settled``. Returns at once where one daemon
        owns the outbox (SQLite): ``mark_interrupted`` at start covers it."""
        ...

    async def unread(self, session: str) -> list[OutgoingMessage]:
        """The local chat's messages no client has acknowledged yet, in id order
        (pending ones included). Other channels have no unread: the platform shows
        what it took, and months of platform replies never pile up in this listing."""
        ...

    async def acknowledge(
        self, session: str, *, up_to: int | None = None, ids: tuple[int, ...] = ()
    ) -> int:
        """Mark messages of ``session`` read; how many changed."""
        ...

    async def history(
        self, session: str, *, after: int = 0, limit: int = 200
    ) -> list[OutgoingMessage]: ...

    async def latest(self, session: str) -> OutgoingMessage | None:
        """The session's newest message, on any channel."""
        ...
