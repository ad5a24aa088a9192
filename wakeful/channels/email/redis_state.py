"""The email channel's state in Redis (``[store] backend = "redis"``), shared by a fleet.

The same contents as the SQLite ``MailDb``, under the event store's prefix:

- ``email:cursor`` (hash): ``<account>\\n<mailbox>`` → the cursor as JSON;
- ``email:seen`` (hash): ``<account>\\n<mailbox>\\n<Message-ID>`` → event id;
- ``email:draft:<Message-ID>`` (hash) per draft, ``email:draft-id`` (hash)
  draft id → Message-ID, and ``email:drafts:<state>`` (sets) for lookups. A
  draft moved to ``sending`` names its daemon (``owner``), which holds the lease
  ``email:owner:<daemon>`` while it runs: only a gone daemon's sends are reconciled.

A cursor only moves forward: ``advance`` is a script that ignores a cursor
older than the stored one, so a watcher that lost its mailbox's lease (and is
about to stop) cannot move the cursor back under its successor; at worst its
successor fetches a message again, whose event id the store deduplicates.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from redis.asyncio import Redis
from redis.typing import EncodableT, FieldT

from wakeful.channels.email.db import Cursor
from wakeful.channels.email.draft_record import OutboxRow
from wakeful.core.outbox.states import DeliveryState
from wakeful.store.leases import DEFAULT_TTL_S
from wakeful.store.redis_named_lease import (
    NamedLease,
    holder_process_gone,
    process_holder_id,
)

# KEYS: cursors, seen. ARGV: field, cursor JSON, uidvalidity, last uid, seen field, event id.
_ADVANCE = """
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then
  local old = cjson.decode(stored)
  if old.uidvalidity ~= tonumber(ARGV[3]) or old.last_uid >= tonumber(ARGV[4]) then
    return 0
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[5] ~= '' then redis.call('HSETNX', KEYS[2], ARGV[5], ARGV[6]) end
return 1
"""

# KEYS: draft hash. ARGV: prefix, new state, detail, now, message id, owner, old states...
_MOVE_DRAFT = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 0 end
for i = 7, #ARGV do
  if state == ARGV[i] then
    redis.call('HSET', KEYS[1], 'state', ARGV[2], 'detail', ARGV[3], 'updated_at', ARGV[4])
    if ARGV[2] == 'sending' then redis.call('HSET', KEYS[1], 'owner', ARGV[6]) end
    redis.call('SREM', ARGV[1] .. 'email:drafts:' .. state, ARGV[5])
    redis.call('SADD', ARGV[1] .. 'email:drafts:' .. ARGV[2], ARGV[5])
    return 1
  end
end
return 0
"""


class RedisMailState:
    """``MailState`` on a Redis client of the email component's own, under ``prefix``."""

    def __init__(
        self, client: Redis, prefix: str, holder: str = "", ttl_s: float = DEFAULT_TTL_S
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._holder = holder or process_holder_id()
        # Held while the email component runs: a draft this daemon is sending names it.
        self.owner_lease = NamedLease(client, self._owner_key(self._holder), self._holder, ttl_s)
        self._cursors = f"{prefix}email:cursor"
        self._seen = f"{prefix}email:seen"
        self._draft_ids = f"{prefix}email:draft-id"

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- the inbound cursor ------------------------------------------------

    async def cursor(self, account: str, mailbox: str) -> Cursor | None:
        raw = await self._client.hget(self._cursors, _mailbox(account, mailbox))
        return Cursor(**json.loads(str(raw))) if raw is not None else None

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None:
        await self._client.hset(self._cursors, _mailbox(account, mailbox), _cursor_json(cursor))

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None:
        where = _mailbox(account, mailbox)
        seen = f"{where}\n{message_id}" if message_id else ""
        args: list[str | int] = [
            where, _cursor_json(cursor), cursor.uidvalidity, cursor.last_uid, seen, event_id
        ]  # fmt: skip
        await self._client.eval(_ADVANCE, 2, self._cursors, self._seen, *args)

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None:
        found = await self._client.hget(self._seen, f"{_mailbox(account, mailbox)}\n{message_id}")
        return None if found is None else str(found)

    async def remember_seen(
        self, account: str, mailbox: str, message_id: str, event_id: str
    ) -> None:
        """Record a delivered Message-ID without touching the cursor (an import)."""
        await self._client.hsetnx(
            self._seen, f"{_mailbox(account, mailbox)}\n{message_id}", event_id
        )

    # --- the outbox's drafts --------------------------------------------------

    async def add_draft(self, row: OutboxRow, now: float) -> None:
        key = self._draft_key(row.message_id)
        fields: dict[FieldT, EncodableT] = {
            "message_id": row.message_id, "draft_id": row.draft_id, "account": row.account,
            "state": row.state.value, "recipients": json.dumps(row.recipients),
            "raw": base64.b64encode(row.raw).decode(), "detail": row.detail,
            "created_at": repr(now), "updated_at": repr(now),
        }  # fmt: skip
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)
            pipe.hset(self._draft_ids, row.draft_id, row.message_id)
            pipe.sadd(f"{self._prefix}email:drafts:{row.state.value}", row.message_id)
            await pipe.execute()

    async def draft(self, draft_or_message_id: str) -> OutboxRow | None:
        message_id = await self._client.hget(self._draft_ids, draft_or_message_id)
        found = await self._client.hgetall(self._draft_key(str(message_id or draft_or_message_id)))
        return _draft(found) if found else None

    async def move_draft(
        self, message_id: str, olds: tuple[str, ...], new: DeliveryState, detail: str
    ) -> bool:
        args = [self._prefix, new.value, detail, repr(time.time()), message_id, self._holder,
                *olds]  # fmt: skip
        moved = await self._client.eval(_MOVE_DRAFT, 1, self._draft_key(message_id), *args)
        return bool(moved)

    async def drafts_in(self, state: DeliveryState) -> list[OutboxRow]:
        members = await self._client.smembers(f"{self._prefix}email:drafts:{state.value}")
        rows = [await self.draft(str(message_id)) for message_id in sorted(members)]
        return [row for row in rows if row is not None]

    async def sending_elsewhere(self, row: OutboxRow) -> bool:
        owner = str(await self._client.hget(self._draft_key(row.message_id), "owner") or "")
        if owner in ("", self._holder) or holder_process_gone(owner):
            return False
        return bool(await self._client.exists(self._owner_key(owner)))

    def _owner_key(self, holder: str) -> str:
        return f"{self._prefix}email:owner:{holder}"

    def _draft_key(self, message_id: str) -> str:
        return f"{self._prefix}email:draft:{message_id}"


def _mailbox(account: str, mailbox: str) -> str:
    return f"{account}\n{mailbox}"


def _cursor_json(cursor: Cursor) -> str:
    return json.dumps(
        {
            "uidvalidity": cursor.uidvalidity,
            "last_uid": cursor.last_uid,
            "resync_below": cursor.resync_below,
        }
    )


def _draft(fields: dict[Any, Any]) -> OutboxRow:
    return OutboxRow(
        str(fields["message_id"]),
        str(fields["draft_id"]),
        str(fields["account"]),
        DeliveryState.parse(str(fields["state"])),
        list(json.loads(str(fields["recipients"]))),
        base64.b64decode(str(fields["raw"])),
        str(fields["detail"]),
    )
