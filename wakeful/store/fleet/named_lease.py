"""A lease on any name in Redis: who may do one thing (watch a mailbox, own a task) now.

``SET <key> "<holder> <token>" NX PX ttl`` takes it; the token comes from
``INCR <key>:fence``, so every new holder has a larger one (a fencing token
a guarded write can compare). Renewing and releasing are Lua scripts that act
only while the value is still ours, so a holder that paused past its TTL can
neither extend nor delete its successor's lease. :func:`hold_while` is the
anyio-native holder: it waits for the lease, runs the work while renewing,
and cancels the work the moment a renewal finds the lease gone.

A lease says nothing about liveness by itself; a holder that stops renewing
(killed, partitioned) loses it after ``ttl``, and :func:`lease_holder` lets
any daemon see that it lapsed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError

from wakeful.store.fleet.holders import holder_process_gone, process_holder_id
from wakeful.store.fleet.ttl import DEFAULT_TTL_S

__all__ = [
    "NamedLease",
    "hold_while",
    "holder_process_gone",
    "lease_holder",
    "process_holder_id",
]

log = structlog.get_logger(__name__)


_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class NamedLease:
    """One lease key; ``acquire``, ``renew``, ``release`` and ``held`` for one holder."""

    def __init__(self, client: Redis, key: str, holder: str, ttl_s: float = DEFAULT_TTL_S) -> None:
        if " " in holder:
            raise ValueError(f"a lease holder id has no spaces: {holder!r}")
        self.client = client
        self.key = key
        self.holder = holder
        self.ttl_s = ttl_s
        self.token: int | None = None  # the fencing token while held

    @property
    def _value(self) -> str:
        return f"{self.holder} {self.token}"

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl_s * 1000))

    async def acquire(self) -> bool:
        """Take the lease if nobody holds it; True when it is ours (again)."""
        if self.token is not None and await self.renew():
            return True
        token = int(await self.client.incr(f"{self.key}:fence"))
        taken = await self.client.set(self.key, f"{self.holder} {token}", nx=True, px=self._ttl_ms)
        self.token = token if taken else None
        return bool(taken)

    async def renew(self) -> bool:
        """Extend the lease by its TTL; False (and forgotten) if it is no longer ours."""
        if self.token is None:
            return False
        renewed = await self.client.eval(_RENEW, 1, self.key, self._value, self._ttl_ms)
        if not renewed:
            self.token = None
        return bool(renewed)

    async def release(self) -> None:
        """Give the lease up if it is still ours; another holder's is never touched."""
        if self.token is None:
            return
        value, self.token = self._value, None
        await self.client.eval(_RELEASE, 1, self.key, value)

    async def held(self) -> bool:
        """Whether Redis still shows this lease as ours."""
        return self.token is not None and _text(await self.client.get(self.key)) == self._value

    async def wait_s(self) -> float:
        """How long until the current holder's lease lapses if not renewed (0: free now)."""
        left_ms = int(await self.client.pttl(self.key))
        return max(0.0, left_ms / 1000) if left_ms > 0 else 0.0

    async def hold(
        self, work: Callable[[], Awaitable[None]], *, on_lost: Callable[[], None] | None = None
    ) -> None:
        """:func:`hold_while` on this lease (the ``Lease`` port's way to hold it)."""
        await hold_while(self, work, on_lost=on_lost)


async def lease_holder(client: Redis, key: str) -> str | None:
    """Who holds the lease at ``key`` now, or None when it lapsed or was released."""
    value = _text(await client.get(key))
    return value.rpartition(" ")[0] or None if value else None


async def hold_while(
    lease: NamedLease,
    work: Callable[[], Awaitable[None]],
    *,
    on_lost: Callable[[], None] | None = None,
    retry_s: float = 1.0,
) -> None:
    """Run ``work`` only while holding ``lease``, forever (until cancelled).

    Waits for the lease (until the holder's TTL lapses), runs ``work`` and
    renews every third of the TTL; if a renewal finds the lease taken (this
    process paused past its TTL, say), ``work`` is cancelled, ``on_lost`` is
    called, and the wait starts again. ``work`` returning ends the hold. The
    lease is released when this returns or is cancelled.
    """
    try:
        while True:
            if not await _acquire_or_wait(lease, retry_s):
                continue
            if await _work_until_lost(lease, work):
                return
            log.warning("lease lost to another holder", key=lease.key, holder=lease.holder)
            if on_lost is not None:
                on_lost()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            try:
                await lease.release()
            except RedisError as exc:  # it lapses by itself after its TTL
                log.warning("cannot release a lease", key=lease.key, error=str(exc))


async def _acquire_or_wait(lease: NamedLease, retry_s: float) -> bool:
    try:
        if await lease.acquire():
            return True
        wait_s = await lease.wait_s()
    except RedisError as exc:
        log.warning("cannot reach Redis for a lease", key=lease.key, error=str(exc))
        wait_s = retry_s
    # Looked at again when the holder's TTL would run out (it may renew first), or
    # after a third of the TTL at most: a holder that released early is replaced soon.
    await anyio.sleep(min(max(wait_s, 0.05), lease.ttl_s / 3))
    return False


async def _work_until_lost(lease: NamedLease, work: Callable[[], Awaitable[None]]) -> bool:
    """True when ``work`` finished; False when the lease was lost and ``work`` cancelled."""
    finished = False

    async def run_work(scope: anyio.CancelScope) -> None:
        nonlocal finished
        await work()
        finished = True
        scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(run_work, group.cancel_scope, name=f"work holding {lease.key}")
        await _renew_until_lost(lease)
        group.cancel_scope.cancel()
    return finished


async def _renew_until_lost(lease: NamedLease) -> None:
    """Renew every third of the TTL; returns when the lease is no longer ours, or
    when Redis has not confirmed it for a whole TTL (it may have lapsed there)."""
    confirmed = anyio.current_time()
    while True:
        await anyio.sleep(lease.ttl_s / 3)
        try:
            if not await lease.renew():
                return
            confirmed = anyio.current_time()
        except RedisError as exc:  # a blip: the next renewal may still be in time
            log.warning("cannot renew a lease", key=lease.key, error=str(exc))
            if anyio.current_time() - confirmed >= lease.ttl_s:
                lease.token = None
                return


def _text(value: bytes | str | None) -> str:
    return value.decode() if isinstance(value, bytes) else value or ""
