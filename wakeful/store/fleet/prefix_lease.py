"""One daemon per Redis key prefix: a lease key, taken at open, renewed, released at close.

``SET <prefix>lease "<pid>@<host> <token>" NX PX ttl``: a second daemon on the
same prefix finds the key and refuses to start, naming the holder. The
holder renews it from a thread the lease owns (started at open, stopped and
joined at close): the store is opened and closed by its caller, with task
groups and cancel scopes of the caller's in between, so a task group of the
store's own could not nest inside them. If the holder is killed, the lease
lapses after ``ttl`` and the next daemon may take it. (#12 replaces this with
per-session ownership.)
"""

from __future__ import annotations

import os
import socket
import threading
import uuid

import anyio.to_thread
import redis
import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError

from wakeful.store import redis_scripts as lua
from wakeful.store.base import StoreUnavailable
from wakeful.store.fleet.holders import process_gone

log = structlog.get_logger(__name__)

LEASE_TTL_S = 15.0
RENEW_EVERY_S = LEASE_TTL_S / 3


class PrefixLease:
    def __init__(
        self, client: Redis, url: str, prefix: str, where: str, ttl_s: float = LEASE_TTL_S
    ) -> None:
        self.key = f"{prefix}lease"
        self.holder = f"pid {os.getpid()}@{socket.gethostname()}"
        self._value = f"{self.holder} {uuid.uuid4().hex}"
        self._client = client
        self._url = url
        self._prefix = prefix
        self._where = where
        self._ttl_ms = int(ttl_s * 1000)
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.lost = False

    async def acquire(self) -> None:
        """Take the lease and start renewing it; raises StoreUnavailable naming the holder."""
        taken = await self._client.set(self.key, self._value, nx=True, px=self._ttl_ms)
        if not taken:
            held_by = _text(await self._client.get(self.key))
            if not (_left_by_a_dead_process(held_by) and await self._take_over(held_by)):
                raise StoreUnavailable(self._refusal(held_by))
        self._renewer = threading.Thread(
            target=self._renew_forever, name=f"redis lease {self.key}", daemon=True
        )
        self._renewer.start()

    async def _take_over(self, held_by: str) -> bool:
        """Replace a lease left by a dead daemon of this host, if it is still that one."""
        take = self._client.register_script(lua.TAKE_OVER_LEASE)
        taken = await take(args=[self._prefix, held_by, self._value, self._ttl_ms])
        if taken:
            log.warning("took over the Redis prefix lease of a daemon that died", was=held_by)
        return bool(taken)

    def _refusal(self, held_by: str) -> str:
        holder = held_by.rpartition(" ")[0] or "another daemon"
        return (
            f"another wakeful daemon ({holder}) already uses Redis at {self._where} with"
            f" prefix {self._prefix!r} (lease key {self.key}); stop it, or give this one"
            " another [store] redis_prefix"
        )

    def _renew_forever(self) -> None:
        client = redis.Redis.from_url(self._url, socket_timeout=RENEW_EVERY_S)
        renew = client.register_script(lua.RENEW_LEASE)
        try:
            while not self._stop.wait(RENEW_EVERY_S):
                try:
                    held = renew(args=[self._prefix, self._value, self._ttl_ms])
                except RedisError as exc:  # Redis down: the store's own calls report it
                    log.warning("cannot renew the Redis prefix lease", key=self.key, error=str(exc))
                    continue
                if not held and not self.lost:
                    self.lost = True
                    log.error("lost the Redis prefix lease to another daemon", key=self.key)
        finally:
            client.close()

    async def release(self) -> None:
        renewer, self._renewer = self._renewer, None
        if renewer is None:
            return
        self._stop.set()
        await anyio.to_thread.run_sync(renewer.join, RENEW_EVERY_S)
        try:
            release = self._client.register_script(lua.RELEASE_LEASE)
            await release(args=[self._prefix, self._value])
        except RedisError as exc:
            log.warning("cannot release the Redis prefix lease", key=self.key, error=str(exc))


def _text(value: bytes | str | None) -> str:
    return value.decode() if isinstance(value, bytes) else value or ""


def _left_by_a_dead_process(held_by: str) -> bool:
    """True for "pid N@<this host> token" when process N is gone: after a SIGKILL,
    the restarted daemon need not wait for the lease to lapse (systemd would give up)."""
    holder = held_by.rpartition(" ")[0]
    pid_text, _, host = holder.removeprefix("pid ").partition("@")
    return process_gone(host, pid_text)
