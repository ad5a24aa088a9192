"""Open the event store that ``[store] backend`` names."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from wakeful.kernel.logging import add_secrets
from wakeful.store.base import Store
from wakeful.store.config import StoreSection


async def open_store(store: StoreSection, data_dir: Path) -> Store:
    """The open store; raises StoreUnavailable (with what to do) if it cannot be opened.

    The store also hands out the backends of the rest of the durable state (the
    outbox, the timers' jobs, the fleet's leases and notices: ``StateBackends``).
    With Redis they live under the same prefix, the outbox on the store's
    connection and the others on their own; shell task records stay files in
    ``data_dir``.
    """
    if store.backend == "redis":
        from wakeful.store.fleet.sessions import FleetOptions
        from wakeful.store.redis_store import RedisStore  # only when used

        add_secrets(_url_passwords(store.redis_url))
        # A single daemon takes the prefix's lease (a second one on it refuses to start);
        # a fleet's daemons share the prefix, each session owned by one at a time.
        fleet = (
            FleetOptions(store.session_lease_ms, store.claim_idle_ms, store.max_deliveries)
            if store.fleet
            else None
        )
        return await RedisStore(
            store.redis_url,
            prefix=store.redis_prefix,
            lease=True,
            fleet=fleet,
            sqlite_file=data_dir / "wakeful.db",  # timers kept there before Redis: moved in
        ).open()
    from wakeful.store.sqlite import SqliteStore

    return await SqliteStore(data_dir / "wakeful.db", synchronous=store.sqlite_synchronous).open()


def _url_passwords(url: str) -> list[str]:
    """Passwords a Redis URL carries (userinfo or ?password=), for the log redactor."""
    parts = urlsplit(url)
    found = [parts.password or "", *parse_qs(parts.query).get("password", [])]
    return [password for password in found if password]
