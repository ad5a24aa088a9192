"""One mailbox watched with IDLE: connect, catch up, wait, repeat; reconnect with backoff.

Exactly once per message: the cursor ``(UIDVALIDITY, last UID)`` moves past
a message only after its event is committed (``submit`` returns after the
commit). A crash in between re-fetches that message under the same event
id, which the store deduplicates. When UIDVALIDITY changes, every message is
fetched again and those whose Message-ID was already delivered are skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from functools import partial

import anyio
import structlog

from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.cursor import Cursor, CursorStore
from wakeful.channels.email.health import MailboxHealth, backoff_s
from wakeful.channels.email.imap import AuthFailed, ImapConnection, in_thread
from wakeful.channels.email.inbound import build_event, email_id, skip_reason
from wakeful.channels.email.message import parse_email
from wakeful.core.front_door import DaemonUnavailable, SubmitResult
from wakeful.kernel.events import Event

log = structlog.get_logger(__name__)

Submit = Callable[[Event], Awaitable[SubmitResult]]
OnHealth = Callable[[MailboxHealth], None]
FETCH_CHUNK = 50
# The first IDLE after a sync ends after this long. Some servers (pymap) announce mail
# that came between the sync's last command and IDLE only when that IDLE ends, not when
# it starts: without a short first IDLE such a mail waited for the re-issue (29 min).
SETTLE_IDLE_S = 1.0


class MailboxWatcher:
    def __init__(
        self,
        account: EmailAccountConfig,
        password: str,
        mailbox: str,
        db: CursorStore,
        submit: Submit,
        on_health: OnHealth,
        *,
        count_unseen: bool = False,
    ) -> None:
        self.account = account
        self.mailbox = mailbox
        self._password = password
        self._db = db
        self._submit = submit
        self._on_health = on_health
        self.health = MailboxHealth(account.name, mailbox, account.session, account.alert_after_s)
        self._attempt = 0
        # With the heartbeat on: (UIDNEXT, unseen count) at the last sync, for its
        # unread-mail check; one STATUS per sync, none when nobody asks.
        self._count_unseen = count_unseen
        self.unseen: tuple[int, int] | None = None

    def standby(self) -> None:
        """Another daemon of the fleet watches this mailbox; this one waits to take over."""
        self._set_state("standby")

    def _set_state(self, state: str) -> None:
        self.health.working(state)
        self._on_health(self.health)

    async def run(self) -> None:
        """Watch until cancelled; every failure is retried after a backoff."""
        while True:
            conn = ImapConnection(self.account, self._password)
            try:
                await self._session(conn)
            except Exception as exc:  # any failure of the connection: back off and retry
                await self._failed(exc)
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    conn.interrupt()  # the close needs no round trip to a dead server
                    await anyio.to_thread.run_sync(conn.close)
            self._attempt += 1
            low, high = self.account.reconnect_min_s, self.account.reconnect_max_s
            await anyio.sleep(backoff_s(self._attempt, low, high))

    async def _failed(self, exc: Exception) -> None:
        auth = isinstance(exc, AuthFailed)
        error = str(exc) if auth else f"{type(exc).__name__}: {exc}"
        log.warning("mailbox failed", account=self.account.name, mailbox=self.mailbox, error=error)
        alert = self.health.failed(error, auth=auth)
        self._on_health(self.health)
        if alert is not None:
            try:
                await self._submit(alert)
            except DaemonUnavailable:  # stopping: the outage is still in /api/status
                log.warning("mailbox alert not delivered", account=self.account.name)

    async def _session(self, conn: ImapConnection) -> None:
        await in_thread(conn, conn.connect)
        uidvalidity, uidnext = await in_thread(conn, lambda: conn.select(self.mailbox))
        cursor = await self._start_cursor(uidvalidity, uidnext)
        self._attempt = 0
        idle = conn.has_idle
        log.info("mailbox connected", account=self.account.name, mailbox=self.mailbox, idle=idle)
        while True:
            self._set_state("syncing")
            # Every UID below this is in the mailbox before the search, so the search sees it.
            synced_next = await in_thread(conn, lambda: conn.uidnext(self.mailbox))
            cursor = await self._deliver_new(conn, cursor)
            if self._count_unseen:
                count = await in_thread(conn, lambda: conn.unseen(self.mailbox))
                self.unseen = (synced_next, count)
            self._set_state("idle" if idle else "polling")
            if idle:
                # Returns on new mail, or at the re-issue interval to renew IDLE.
                changed = await self._wait(conn, SETTLE_IDLE_S) or await self._wait(
                    conn, self.account.idle_reissue_s
                )
                if not changed:
                    await self._self_check(conn, synced_next)
            else:
                await anyio.sleep(self.account.poll_interval_s)
                await in_thread(conn, conn.noop)

    async def _wait(self, conn: ImapConnection, timeout_s: float) -> bool:
        timeout_s = min(timeout_s, self.account.idle_reissue_s)
        return await in_thread(conn, lambda: conn.wait_for_change(timeout_s))

    async def _self_check(self, conn: ImapConnection, synced_next: int) -> None:
        """A quiet IDLE while UIDNEXT moved means a wake-up was lost: say so (log and
        status); the loop's next search then delivers what came."""
        now_next = await in_thread(conn, lambda: conn.uidnext(self.mailbox))
        if now_next > synced_next:
            log.warning(
                "mail arrived without an IDLE event: resyncing the mailbox",
                account=self.account.name,
                mailbox=self.mailbox,
                uidnext_before=synced_next,
                uidnext_now=now_next,
            )
            self.health.resynced(synced_next, now_next)

    async def _start_cursor(self, uidvalidity: int, uidnext: int) -> Cursor:
        name, mailbox = self.account.name, self.mailbox
        cursor = await self._db.cursor(name, mailbox)
        if cursor is not None and cursor.uidvalidity == uidvalidity:
            return cursor
        if cursor is None:
            start = 0 if self.account.initial_sync == "all" else max(0, uidnext - 1)
            cursor = Cursor(uidvalidity, start)
        else:
            log.warning(
                "UIDVALIDITY changed: resyncing the mailbox",
                account=name,
                mailbox=mailbox,
                old=cursor.uidvalidity,
                new=uidvalidity,
            )
            cursor = Cursor(uidvalidity, 0, resync_below=uidnext)
        await self._db.set_cursor(name, mailbox, cursor)
        return cursor

    async def _deliver_new(self, conn: ImapConnection, cursor: Cursor) -> Cursor:
        uids = await in_thread(conn, lambda: conn.uids_after(cursor.last_uid))
        for start in range(0, len(uids), FETCH_CHUNK):
            chunk = uids[start : start + FETCH_CHUNK]
            raws = await in_thread(conn, partial(conn.fetch_raw, chunk))
            for uid in chunk:
                raw = raws.get(uid)
                if raw is not None:  # None: expunged since the search
                    cursor = await self._deliver_one(cursor, uid, raw)
        return cursor

    async def _deliver_one(self, cursor: Cursor, uid: int, raw: bytes) -> Cursor:
        name, mailbox = self.account.name, self.mailbox
        mail = parse_email(raw)
        event_id = email_id(name, mailbox, cursor.uidvalidity, uid)
        reason = skip_reason(self.account, mail)
        if reason is None and uid < cursor.resync_below and mail.message_id:
            earlier = await self._db.seen(name, mailbox, mail.message_id)
            if earlier is not None:
                reason = f"already delivered as {earlier} before UIDVALIDITY changed"
        if reason is None:
            await self._submit(build_event(self.account, mailbox, cursor.uidvalidity, uid, mail))
            self.health.delivered += 1
        else:
            self.health.skipped += 1
            log.info("email skipped", event_id=event_id, reason=reason)
        cursor = dataclasses.replace(cursor, last_uid=uid)
        await self._db.advance(name, mailbox, cursor, mail.message_id, event_id)
        return cursor
