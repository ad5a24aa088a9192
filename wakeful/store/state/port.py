"""The state port: compare-and-set records.

Only what components need: short string records in a namespace, read and
written one key at a time, with a compare-and-set for records that several
daemons of a fleet may change at once. (Who does a thing when several daemons
share a store — a named lease, change notices — is the store's
``coordination``, ``wakeful/store/fleet/port.py``.) Both backends implement it:
``sqlite_state.py`` and ``redis_state.py``; the contract test
(``tests/test_state_port.py``) runs the same operations against both.
"""

from __future__ import annotations

from typing import Protocol


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


class StatePort(Protocol):
    """Records on the daemon's store, as ``Store.state()`` hands them out."""

    def records(self, namespace: str) -> Records:
        """The records of ``namespace``: ``<owner>:<name>`` (``email:cursor``), the owner
        a component's name, so it stays clear of the store's own keys and of others'."""
        ...

    async def old_hash(self, name: str) -> dict[str, str]:
        """A Redis hash an older version wrote at ``<prefix><name>``, for a read fallback
        to data from before this port ({} on SQLite, which had no such hashes)."""
        ...


def check_namespace(namespace: str) -> str:
    owner, colon, name = namespace.partition(":")
    if not (owner and colon and name):
        raise ValueError(f"a records namespace is <owner>:<name>, not {namespace!r}")
    return namespace
