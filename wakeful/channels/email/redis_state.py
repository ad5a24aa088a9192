"""The email channel's state in Redis (``[store] backend = "redis"``), shared by a fleet.

The same contents as the SQLite ``MailDb``, under the event store's prefix:

- ``email:cursor`` (hash): ``<account>\\n<mailbox>`` → the cursor as JSON;
- ``email:seen`` (hash): ``<account>\\n<mailbox>\\n<Message-ID>`` → event id;
- ``email:draft:<Message-ID>`` (hash) per draft and ``email:draft-id`` (hash)
  draft id → Message-ID. A draft's ``state`` is set only on drafts an older
  version sent through its own e-mail outbox; new drafts are sent through the
  shared outbox, whose Redis backend keeps their state and their senders' claims.

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
from wakeful.channels.email.draft_record import Draft, legacy_state
from wakeful.core.outbox.states import DeliveryState

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

# KEYS: draft hash. ARGV: prefix, new state, detail, now, message id: an older
# version's send left "sending", settled by compare-and-set (its state sets kept).
_SETTLE_LEGACY = """
if redis.call('HGET', KEYS[1], 'state') ~= 'sending' then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'detail', ARGV[3], 'updated_at', ARGV[4])
redis.call('SREM', ARGV[1] .. 'email:drafts:sending', ARGV[5])
redis.call('SADD', ARGV[1] .. 'email:drafts:' .. ARGV[2], ARGV[5])
return 1
"""


class RedisMailState:
    """``MailState`` on a Redis client of the email component's own, under ``prefix``."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._prefix = prefix
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

    # --- the drafts --------------------------------------------------------

    async def add_draft(self, row: Draft, now: float) -> None:
        key = self._draft_key(row.message_id)
        fields: dict[FieldT, EncodableT] = {
            "message_id": row.message_id, "draft_id": row.draft_id, "account": row.account,
            "state": row.stored_state, "recipients": json.dumps(row.recipients),
            "raw": base64.b64encode(row.raw).decode(), "detail": row.legacy_detail,
            "created_at": repr(now), "updated_at": repr(now),
        }  # fmt: skip
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)
            pipe.hset(self._draft_ids, row.draft_id, row.message_id)
            if row.legacy_state is not None:  # an imported draft an older version sent
                pipe.sadd(f"{self._prefix}email:drafts:{row.stored_state}", row.message_id)
            await pipe.execute()

    async def draft(self, draft_or_message_id: str) -> Draft | None:
        message_id = await self._client.hget(self._draft_ids, draft_or_message_id)
        found = await self._client.hgetall(self._draft_key(str(message_id or draft_or_message_id)))
        return _draft(found) if found else None

    async def settle_legacy(self, message_id: str, new: DeliveryState, detail: str) -> bool:
        args = [self._prefix, new.value, detail, repr(time.time()), message_id]
        moved = await self._client.eval(_SETTLE_LEGACY, 1, self._draft_key(message_id), *args)
        return bool(moved)

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


def _draft(fields: dict[Any, Any]) -> Draft:
    return Draft(
        str(fields["message_id"]),
        str(fields["draft_id"]),
        str(fields["account"]),
        list(json.loads(str(fields["recipients"]))),
        base64.b64decode(str(fields["raw"])),
        legacy_state(str(fields["state"])),
        str(fields["detail"]),
    )
