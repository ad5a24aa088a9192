"""The outbox on Redis (``[store] backend = "redis"``), under the event store's prefix.

One hash per message (``outbox:msg:<id>``), the key → id index that makes
``add`` idempotent, and sorted sets (score: id) per state, per session's
unread messages and per session's history. Every write is one Lua script, so
a message and its indexes never disagree.

Several daemons may share the prefix. A claim (``pending → sending``) writes
the claiming daemon (``owner``) and the time into the message; each daemon
holds a lease ``outbox:owner:<owner>`` while its deliverer runs. A message
found ``sending`` is settled (``unknown``, or ``pending`` again on a
resend-safe channel) only once its owner's lease has lapsed, or its owner's
process on this host has ended — never while the daemon sending it lives.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from wakeful.store.base import StoreUnavailable
from wakeful.store.call_token import new_token
from wakeful.store.fleet.named_lease import (
    NamedLease,
    hold_while,
    holder_process_gone,
    process_holder_id,
)
from wakeful.store.fleet.ttl import DEFAULT_TTL_S
from wakeful.store.outbox.record import (
    LOCAL_CHAT,
    NewMessage,
    OutgoingMessage,
    approval_of_old_record,
)
from wakeful.store.outbox.states import (
    RESENT_AFTER_STOP,
    STOPPED_MID_SEND,
    DeliveryState,
    check_move,
)

if TYPE_CHECKING:  # the store hands this backend out: it imports this module
    from wakeful.store.redis_store import RedisStore

log = structlog.get_logger(__name__)

PENDING, SENDING = DeliveryState.PENDING, DeliveryState.SENDING

SCRIPTS = {
    "ADD": """
local p = ARGV[1]
local msg = p .. 'outbox:msg:'
local existing = redis.call('GET', p .. 'outbox:key:' .. ARGV[2])
if existing then
  -- 2: this call's own write (its answer was lost and the call retried), 0: another's
  local mine = redis.call('HGET', msg .. existing, 'token') == ARGV[13]
  return {mine and 2 or 0, redis.call('HGETALL', msg .. existing)}
end
local id = redis.call('INCR', p .. 'outbox:seq')
local state, attempts, owner = 'pending', 0, ''
if ARGV[8] == '1' then state, attempts, owner = 'sending', 1, ARGV[11] end
redis.call('HSET', msg .. id, 'id', id, 'key', ARGV[2], 'session', ARGV[3], 'channel', ARGV[4],
  'text', ARGV[5], 'answers', ARGV[6], 'created_at', ARGV[7], 'updated_at', ARGV[7],
  'state', state, 'attempts', attempts, 'last_error', '', 'acked_at', '', 'address', ARGV[9],
  'owner', owner, 'claimed_at', owner ~= '' and ARGV[7] or '', 'approval', ARGV[12],
  'token', ARGV[13])
redis.call('SET', p .. 'outbox:key:' .. ARGV[2], id)
redis.call('ZADD', p .. 'outbox:state:' .. state, id, id)
if ARGV[4] == ARGV[10] then redis.call('ZADD', p .. 'outbox:unread:' .. ARGV[3], id, id) end
redis.call('ZADD', p .. 'outbox:session:' .. ARGV[3], id, id)
return {1, id}
""",
    "MOVE": """
local p = ARGV[1]
local k = p .. 'outbox:msg:' .. ARGV[2]
if redis.call('HGET', k, 'state') ~= ARGV[3] then return 0 end
-- ARGV[9]: only if the claim is still this owner's (settling a gone daemon's send)
if ARGV[9] and (redis.call('HGET', k, 'owner') or '') ~= ARGV[9] then return 0 end
redis.call('HSET', k, 'state', ARGV[4], 'last_error', ARGV[6], 'updated_at', ARGV[7])
if ARGV[4] == 'sending' then redis.call('HSET', k, 'owner', ARGV[8], 'claimed_at', ARGV[7]) end
redis.call('HINCRBY', k, 'attempts', ARGV[5])
redis.call('ZREM', p .. 'outbox:state:' .. ARGV[3], ARGV[2])
redis.call('ZADD', p .. 'outbox:state:' .. ARGV[4], ARGV[2], ARGV[2])
return redis.call('HGETALL', k)
""",
    "ACK": """
local p = ARGV[1]
local unread = p .. 'outbox:unread:' .. ARGV[2]
local n = 0
local function ack(id)
  if redis.call('ZREM', unread, id) == 1 then
    redis.call('HSET', p .. 'outbox:msg:' .. id, 'acked_at', ARGV[4])
    n = n + 1
  end
end
if tonumber(ARGV[3]) >= 0 then
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', unread, '-inf', ARGV[3])) do ack(id) end
end
for i = 5, #ARGV do ack(ARGV[i]) end
return n
""",
    "SENDING_OWNERS": """
local p = ARGV[1]
local out = {}
for _, id in ipairs(redis.call('ZRANGE', p .. 'outbox:state:sending', 0, -1)) do
  local k = p .. 'outbox:msg:' .. id
  local owner = redis.call('HGET', k, 'owner') or ''
  local alive = owner ~= '' and redis.call('EXISTS', p .. 'outbox:owner:' .. owner) or 0
  table.insert(out, id)
  table.insert(out, owner)
  table.insert(out, redis.call('HGET', k, 'channel') or '')
  table.insert(out, alive)
end
return out
""",
    "FETCH": """
local p = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', p .. ARGV[2], ARGV[3], ARGV[4], 'LIMIT', 0, ARGV[5])
local out = {}
for i, id in ipairs(ids) do out[i] = redis.call('HGETALL', p .. 'outbox:msg:' .. id) end
return out
""",
}


def _record(flat: Sequence[Any]) -> OutgoingMessage:
    f = dict(zip(flat[0::2], flat[1::2], strict=True))
    return OutgoingMessage(
        id=int(f["id"]),
        session=f["session"],
        channel=f["channel"],
        text=f["text"],
        key=f["key"],
        state=DeliveryState.parse(f["state"]),
        attempts=int(f["attempts"]),
        last_error=f["last_error"],
        created_at=float(f["created_at"]),
        updated_at=float(f["updated_at"]),
        answers=f["answers"] or None,
        acked_at=float(f["acked_at"]) if f["acked_at"] else None,
        address=f.get("address") or None,  # records from before addresses have none
        # '' is "not a notice"; no field at all is a record from before the field.
        approval=f["approval"] or None if "approval" in f else approval_of_old_record(f["key"]),
    )


class RedisOutbox:
    """``OutgoingMessages`` on the event store's Redis connection and key prefix."""

    def __init__(self, store: RedisStore, owner_ttl_s: float = DEFAULT_TTL_S) -> None:
        self._store = store
        self._scripts: dict[str, AsyncScript] = {}
        self.owner = process_holder_id()  # written into every claim this daemon makes
        self._owner_ttl_s = owner_ttl_s
        self._lease: NamedLease | None = None

    async def open(self) -> RedisOutbox:
        async def register(client: Redis) -> dict[str, AsyncScript]:
            return {name: client.register_script(text) for name, text in SCRIPTS.items()}

        async def the_client(client: Redis) -> Redis:
            return client

        self._scripts = await self._store._run(register, retry=True)
        client = await self._store._run(the_client, retry=True)
        key = f"{self._store.prefix}outbox:owner:{self.owner}"
        self._lease = NamedLease(client, key, self.owner, self._owner_ttl_s)
        # Taken before the first claim, so no other daemon ever sees our claims ownerless;
        # renewed by watch_claims while the deliverer runs.
        await self._store._run(lambda _: self._lease_acquire(), retry=True)
        return self

    async def _lease_acquire(self) -> bool:
        assert self._lease is not None
        return await self._lease.acquire()

    async def watch_claims(
        self, resend: Collection[str], settled: Callable[[list[OutgoingMessage]], None]
    ) -> None:
        """Until cancelled: renew this daemon's lease, and settle the sends of daemons
        whose lease lapsed (every TTL), reporting them to ``settled``."""
        assert self._lease is not None

        async def sweep_forever() -> None:
            while True:
                await anyio.sleep(self._owner_ttl_s)
                try:
                    settled(await self.mark_interrupted(resend))
                except StoreUnavailable as exc:  # the next sweep tries again
                    log.warning("cannot settle other daemons' sends", error=str(exc))

        await hold_while(self._lease, sweep_forever)

    async def _script(self, name: str, args: Sequence[str | int], *, retry: bool) -> Any:
        script, prefix = self._scripts[name], self._store.prefix
        return await self._store._run(lambda c: script(args=[prefix, *args], client=c), retry=retry)

    async def _fetch(self, index: str, low: str, high: str = "+inf", limit: int = -1) -> Any:
        rows = await self._script("FETCH", [index, low, high, limit], retry=True)
        return [_record(row) for row in rows]

    async def add(self, message: NewMessage) -> OutgoingMessage:
        return (await self._add(message, claim=False))[0]

    async def add_claimed(self, message: NewMessage) -> tuple[OutgoingMessage, bool]:
        return await self._add(message, claim=True)

    async def _add(self, message: NewMessage, *, claim: bool) -> tuple[OutgoingMessage, bool]:
        m = message
        args: list[str | int] = [m.key, m.session, m.channel, m.text, m.answers or "",
                repr(time.time()),
                int(claim), m.address or "", LOCAL_CHAT, self.owner,
                m.approval or "", new_token()]  # fmt: skip
        # Safe to repeat: a second run finds the key and returns the first record. The
        # token tells whose it is: this call's own (the answer to its first run was lost)
        # is still reported created, and claimed by this call, so the deliverer sends it
        # (else it would wait, ``sending``, for the restart check to call it unknown).
        now = float(args[5])
        created, found = await self._script("ADD", args, retry=True)
        if created == 0:
            return _record(found), False
        if created == 2:
            return _record(found), True
        # Built here rather than read back: parsing a whole hash costs more than the write.
        state = DeliveryState.SENDING if claim else DeliveryState.PENDING
        return OutgoingMessage(
            int(found), m.session, m.channel, m.text, m.key, state, int(claim), "", now, now,
            m.answers, None, m.address, m.approval,
        ), True  # fmt: skip

    async def get(self, message_id: int) -> OutgoingMessage | None:
        key = f"{self._store.prefix}outbox:msg:{message_id}"
        flat = await self._store._run(lambda c: c.hgetall(key), retry=True)
        return _record([x for pair in flat.items() for x in pair]) if flat else None

    async def pending(self, limit: int = 100) -> list[OutgoingMessage]:
        result: list[OutgoingMessage] = await self._fetch(
            "outbox:state:pending", "-inf", limit=limit
        )
        return result

    async def move(
        self, message_id: int, old: DeliveryState, new: DeliveryState, *, error: str = ""
    ) -> OutgoingMessage | None:
        return await self._move(message_id, old, new, error=error)

    async def _move(
        self,
        message_id: int,
        old: DeliveryState,
        new: DeliveryState,
        *,
        error: str = "",
        if_owner: str | None = None,
    ) -> OutgoingMessage | None:
        check_move(old, new)
        attempt = 1 if new is DeliveryState.SENDING else 0
        args = [message_id, old.value, new.value, attempt, error[:1000], repr(time.time()),
                self.owner, *([] if if_owner is None else [if_owner])]  # fmt: skip
        # Not repeated on a dropped connection: a compare-and-set that did happen
        # would then report "lost the race".
        moved = await self._script("MOVE", args, retry=False)
        return _record(moved) if moved else None

    async def mark_interrupted(self, resend: Collection[str] = ()) -> list[OutgoingMessage]:
        """Settle what daemons that are gone left ``sending`` (our own sends are in flight)."""
        flat = await self._script("SENDING_OWNERS", [], retry=True)
        moved = []
        for i in range(0, len(flat), 4):
            message_id, owner, channel, alive = int(flat[i]), flat[i + 1], flat[i + 2], flat[i + 3]
            if owner == self.owner or (alive and not holder_process_gone(owner)):
                continue
            if channel in resend:
                new, error = PENDING, RESENT_AFTER_STOP
            else:
                new, error = DeliveryState.UNKNOWN, STOPPED_MID_SEND
            found = await self._move(message_id, SENDING, new, error=error, if_owner=owner)
            if found is not None:
                log.warning("a send whose daemon is gone was settled", message_id=message_id,
                            owner=owner, state=new.value)  # fmt: skip
                moved.append(found)
        return moved

    async def unread(self, session: str) -> list[OutgoingMessage]:
        found: list[OutgoingMessage] = await self._fetch(f"outbox:unread:{session}", "-inf")
        return found

    async def acknowledge(
        self, session: str, *, up_to: int | None = None, ids: tuple[int, ...] = ()
    ) -> int:
        limit = -1 if up_to is None else up_to
        args: list[str | int] = [session, limit, repr(time.time()), *ids]
        return int(await self._script("ACK", args, retry=True))

    async def latest(self, session: str) -> OutgoingMessage | None:
        index = f"{self._store.prefix}outbox:session:{session}"
        newest = await self._store._run(lambda c: c.zrevrange(index, 0, 0), retry=True)
        return await self.get(int(str(newest[0]))) if newest else None

    async def history(
        self, session: str, *, after: int = 0, limit: int = 200
    ) -> list[OutgoingMessage]:
        found: list[OutgoingMessage] = await self._fetch(
            f"outbox:session:{session}", f"({after}", limit=limit
        )
        return found
