"""Where the email state lives, and who watches each mailbox when daemons share Redis.

With the SQLite store, the state is ``MailDb`` in the data directory and
this daemon watches every mailbox. With ``[store] backend = "redis"`` the
state is in Redis (``RedisMailState``) and each mailbox is watched by one
daemon of the fleet at a time: the holder of its named lease
(``email:watch:<account>:<mailbox>``). The others keep the watcher in
``standby`` (no IMAP connection, no IDLE) and take over when the lease
lapses — the holder stopped, died, or lost touch with Redis.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from wakeful.channels.email.db import MailDb
from wakeful.channels.email.redis_state import RedisMailState
from wakeful.channels.email.state_port import MailState
from wakeful.channels.email.watcher import MailboxWatcher
from wakeful.core.components.context import ComponentSetup
from wakeful.store.leases import DEFAULT_TTL_S
from wakeful.store.redis_named_lease import (
    NamedLease,
    hold_while,
    process_holder_id,
)


@dataclass
class MailBackend:
    state: MailState
    client: Redis | None = None  # set when the fleet shares Redis
    prefix: str = ""
    lease_ttl_s: float = DEFAULT_TTL_S
    holder: str = ""

    async def watch(self, watcher: MailboxWatcher) -> None:
        """Run ``watcher`` for as long as the daemon runs (while holding its lease, on Redis)."""
        if self.client is None:
            await watcher.run()
            return
        key = f"{self.prefix}email:watch:{watcher.account.name}:{watcher.mailbox}"
        lease = NamedLease(self.client, key, self.holder, self.lease_ttl_s)
        watcher.standby()
        await hold_while(lease, watcher.run, on_lost=watcher.standby)


async def open_mail_backend(
    setup: ComponentSetup, lease_ttl_s: float = DEFAULT_TTL_S
) -> MailBackend:
    section = setup.settings.store
    if section.backend != "redis":
        db = MailDb(setup.data_dir / "wakeful.db")
        setup.resources.push_async_callback(db.aclose)
        return MailBackend(db)
    from wakeful.channels.email.redis_import import import_sqlite_mail_state
    from wakeful.store.redis_connect import component_redis

    # Per mailbox one connection may sit in a lease wait; the state's calls share the rest.
    client = component_redis(section, "email", max_connections=8)
    holder = process_holder_id()
    state = RedisMailState(client, section.redis_prefix)
    setup.resources.push_async_callback(state.aclose)
    await import_sqlite_mail_state(setup.data_dir / "wakeful.db", state)
    return MailBackend(state, client, section.redis_prefix, lease_ttl_s, holder)
