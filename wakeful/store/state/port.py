"""The state port: compare-and-set records and named leases.

Only what components need: short string records in a namespace, read and
written one key at a time, with a compare-and-set for records that several
daemons of a fleet may change at once; and a named lease, so that one daemon
at a time does a thing (watch a mailbox). Both backends implement it:
``sqlite_state.py`` and ``redis_state.py``; the contract test
(``tests/test_state_port.py``) runs the same operations against both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from wakeful.store.fleet.ttl import DEFAULT_TTL_S


class Records(Protocol):
    """String records by key, in one namespace (a Redis hash, or rows of a table)."""

    async def get(self, key: str) -> str | None: ...

    async def put(self, key: str, value: str | None) -> None:
        """Set ``key`` (``None`` deletes it), whatever it held."""
        ...

    async def put_if(self, key: str, expected: str | None, value: str | None) -> bool:
        """Set ``key`` to ``value`` (``None`` deletes it) only if it now holds ``expected``
        (``None``: absent), atomically; False, and nothing written, if it does not.
        Of writers that read the same value, exactly one wins; the others read again."""
        ...


class NamedLeases(Protocol):
    async def hold(
        self,
        name: str,
        work: Callable[[], Awaitable[None]],
        *,
        ttl_s: float = DEFAULT_TTL_S,
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        """Run ``work`` while this process holds the lease ``name``, until cancelled.

        With Redis, one daemon of the fleet holds it at a time: ``on_wait`` is called
        before waiting for it and whenever it is lost (``work`` is then cancelled and
        the wait starts again); another daemon takes it ``ttl_s`` after its holder
        stopped renewing. With SQLite one process owns the data directory, so ``work``
        just runs. ``work`` returning ends the hold."""
        ...


class StatePort(Protocol):
    """Records and leases on the daemon's store, as ``Store.state()`` hands them out."""

    def records(self, namespace: str) -> Records:
        """The records of ``namespace``: ``<owner>:<name>`` (``email:cursor``), the owner
        a component's name, so it stays clear of the store's own keys and of others'."""
        ...

    @property
    def leases(self) -> NamedLeases: ...

    async def old_hash(self, name: str) -> dict[str, str]:
        """A Redis hash an older version wrote at ``<prefix><name>``, for a read fallback
        to data from before this port ({} on SQLite, which had no such hashes)."""
        ...


def check_namespace(namespace: str) -> str:
    owner, colon, name = namespace.partition(":")
    if not (owner and colon and name):
        raise ValueError(f"a records namespace is <owner>:<name>, not {namespace!r}")
    return namespace
