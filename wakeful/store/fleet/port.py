"""What daemons sharing one store use to split work between them.

Only a store several daemons can share hands one out (Redis: ``Store.coordination``
yields None on SQLite, where the one daemon does everything itself). Three
things, each under a name the caller picks (the store adds its key prefix):

- a named :class:`Lease`: who does one thing now (watch a mailbox, check a URL,
  own the shell tasks it lists); held while renewed, taken over when it lapses;
- :class:`ChangeNotices`: a topic on which a daemon names what it changed, so
  the others re-read it at once rather than at their next start;
- a :class:`Roster`: a small shared table (name → text) every daemon reads, with
  a compare-and-delete so two daemons acting on one entry act once.

The roster's calls and ``lapsed`` raise ``StoreUnavailable`` when the store cannot
answer; a lease's and the notices' own loops ride out a blip themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from wakeful.store.fleet.ttl import DEFAULT_TTL_S


class Lease(Protocol):
    """One named lease for one holder."""

    @property
    def key(self) -> str: ...

    @property
    def holder(self) -> str: ...

    @property
    def ttl_s(self) -> float: ...

    async def acquire(self) -> bool:
        """Take it if nobody holds it; True when it is ours (again)."""
        ...

    async def hold(
        self, work: Callable[[], Awaitable[None]], *, on_lost: Callable[[], None] | None = None
    ) -> None:
        """Run ``work`` only while holding the lease, until cancelled or ``work`` returns:
        waits for it, renews it, cancels ``work`` (and calls ``on_lost``) if it is lost
        and waits again; released at the end."""
        ...


class ChangeNotices(Protocol):
    """Names of changed things on one topic, from each daemon to the others."""

    async def announce(self, name: str) -> None:
        """Best effort: a daemon that misses it re-reads everything when its feed resumes."""
        ...

    async def follow(
        self,
        changed: Callable[[str], Awaitable[None]],
        resync: Callable[[], Awaitable[None]],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``changed`` for each other daemon's notice until cancelled; after a lost
        feed, subscribe again and ``resync`` (notices may have been missed meanwhile)."""
        ...


class Roster(Protocol):
    """A small shared table: entry name → text."""

    async def put(self, name: str, value: str) -> None: ...

    async def delete(self, name: str) -> None: ...

    async def entries(self) -> dict[str, str]: ...

    async def delete_if(self, name: str, expected: str) -> bool:
        """Delete the entry only if it still holds ``expected``; whether it did."""
        ...


class Coordination(Protocol):
    """Leases, change notices and rosters on the store the daemons share."""

    @property
    def holder(self) -> str:
        """This daemon process's name as a lease holder (one per coordination)."""
        ...

    def lease(self, name: str, *, holder: str = "", ttl_s: float = DEFAULT_TTL_S) -> Lease:
        """The lease ``name`` for ``holder`` (default: :attr:`holder`)."""
        ...

    async def lapsed(self, name: str) -> bool:
        """Whether nobody holds the lease ``name`` now (it lapsed or was released)."""
        ...

    def notices(self, topic: str) -> ChangeNotices: ...

    def roster(self, name: str) -> Roster: ...
