"""Who watches a subscription when daemons share the store: the holder of its lease.

Where the store is shared (Redis) every daemon of the fleet loads the same
subscriptions; each would open its own IMAP connection for the same one (the
events dedup by id, but N connections and N IDLEs). So, as the email channel
does for its mailboxes (EmailComponent._watch), each subscription's
watch runs only in the daemon holding the named lease
``subscriptions:watch:<id>``; the others stand by and take over when it
lapses (the holder stopped, died, or lost touch with Redis). http_check
subscriptions are leased the same way (one GET per interval across the fleet).

A subscription made or removed through one daemon reaches the others at once,
not at their restart: the daemon that changed it names it on the topic
``subscriptions:changes`` (:func:`change_notices`) and each other daemon
re-reads that record and arms or disarms it. A notice can be missed while the
feed is down (Redis restarted), so a re-subscribed feed re-reads every record.

The leases and notices are the store's (``Coordination`` in
``wakeful/store/fleet/port.py``); this module only names them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from wakeful.store.fleet.port import ChangeNotices, Coordination, Lease
from wakeful.store.fleet.ttl import DEFAULT_TTL_S

CHANGES = "subscriptions:changes"


class WatchLeases:
    def __init__(
        self, coordination: Coordination, holder: str = "", ttl_s: float = DEFAULT_TTL_S
    ) -> None:
        self._coordination = coordination
        self._holder = holder or coordination.holder
        self._ttl_s = ttl_s

    def _lease(self, sub_id: str) -> Lease:
        name = f"subscriptions:watch:{sub_id}"
        return self._coordination.lease(name, holder=self._holder, ttl_s=self._ttl_s)

    def key(self, sub_id: str) -> str:
        """Where the store keeps the subscription's lease (for a look at who holds it)."""
        return self._lease(sub_id).key

    async def hold(
        self,
        sub_id: str,
        work: Callable[[], Awaitable[None]],
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        """Run ``work`` only while this daemon holds the subscription's lease (until
        cancelled, or ``work`` returns); released when it ends."""
        await self._lease(sub_id).hold(work, on_lost=on_lost)


def change_notices(coordination: Coordination) -> ChangeNotices:
    """Tells the other daemons of a fleet which subscription changed, and hears them."""
    return coordination.notices(CHANGES)
