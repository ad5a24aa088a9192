"""The mailbox subscription's watch: the email channel's watcher, filtered, with its own cursor.

Imported when a mailbox subscription is planned or watched, never at start-up: it
brings the email stack (IMAP, MIME, iCalendar).
"""

from __future__ import annotations

import dataclasses
import json
import re
from fnmatch import fnmatch
from typing import Any

from wakeful.channels.email.cursor import Cursor
from wakeful.channels.email.inbound import build_event, email_id
from wakeful.channels.email.message import ParsedEmail, parse_email
from wakeful.channels.email.watcher import MailboxWatcher
from wakeful.sources.subscriptions.kinds.mailbox import CURSOR_PREFIX
from wakeful.sources.subscriptions.records import Subscription
from wakeful.store.base import ChannelState


class FilteredWatcher(MailboxWatcher):
    """The email channel's watcher, delivering only the subscription's matching mail."""

    def __init__(self, sub: Subscription, *args: Any) -> None:
        super().__init__(*args)
        self._sub = sub

    async def _deliver_one(self, cursor: Cursor, uid: int, raw: bytes) -> Cursor:
        mail = parse_email(raw)
        event_id = email_id(self.account.name, self.mailbox, cursor.uidvalidity, uid)
        if matches(self._sub.spec, mail):
            await self._submit(
                build_event(self.account, self.mailbox, cursor.uidvalidity, uid, mail)
            )
        cursor = dataclasses.replace(cursor, last_uid=uid)
        await self._db.advance(self.account.name, self.mailbox, cursor, mail.message_id, event_id)
        return cursor


def matches(spec: dict[str, Any], mail: ParsedEmail) -> bool:
    """Sender and subject (whichever are given) both match: globs ignore case; regular
    expressions are searched."""
    for name, value in (("sender", mail.sender), ("subject", mail.subject)):
        wanted = spec.get(name)
        if not wanted:
            continue
        if spec.get("regex"):
            if re.search(wanted, value) is None:
                return False
        elif not fnmatch(value.lower(), wanted.lower()):
            return False
    return True


class SubscriptionCursor:
    """The watcher's cursor as one channel-state value. It keeps no Message-IDs: after a
    UIDVALIDITY change (rare: the folder was rebuilt) its matching mail is reported again."""

    def __init__(self, state: ChannelState, sub_id: str) -> None:
        self._state = state
        self._key = CURSOR_PREFIX + sub_id

    async def cursor(self, account: str, mailbox: str) -> Cursor | None:
        stored = await self._state.get_state(self._key)
        return None if stored is None else Cursor(**json.loads(stored))

    async def set_cursor(self, account: str, mailbox: str, cursor: Cursor) -> None:
        await self._state.put_state(self._key, json.dumps(dataclasses.asdict(cursor)))

    async def advance(
        self, account: str, mailbox: str, cursor: Cursor, message_id: str, event_id: str
    ) -> None:
        await self.set_cursor(account, mailbox, cursor)

    async def seen(self, account: str, mailbox: str, message_id: str) -> str | None:
        return None
