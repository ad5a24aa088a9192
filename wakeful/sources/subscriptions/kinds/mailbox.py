"""``mailbox``: an IMAP folder of a configured account, filtered by sender and subject.

The email channel's watcher does the work (IDLE, reconnects with backoff, a
cursor moved only after the event is committed); this kind gives it a
cursor of its own, kept in the store's channel state, and a delivery step
that keeps only the mail matching the filter. A mail is built into its event
by the email channel (so it is trusted only when it is the owner's,
authenticated by the receiving server) and then tagged as the
subscription's. Mail already in the folder when it subscribes is not
reported: the cursor is set by the connect_channel call itself. In a fleet
on Redis one daemon watches each subscription (subscriptions/fleet.py); the
cursor is in the shared channel state, so the next holder resumes there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wakeful.core.effects import Effect, Reach
from wakeful.core.front_door import SubmitResult
from wakeful.kernel.events import Event
from wakeful.sources.subscriptions.events import tagged
from wakeful.sources.subscriptions.kinds.base import Asking, Fire, Planned, Refusal, Report
from wakeful.sources.subscriptions.records import Kind, Subscription
from wakeful.sources.subscriptions.request import ConnectRequest
from wakeful.store.base import ChannelState

if TYPE_CHECKING:
    from wakeful.channels.email.accounts import MailAccounts
    from wakeful.channels.email.health import MailboxHealth
    from wakeful.sources.subscriptions.fleet import (
        WatchLeases,  # the email stack loads when a mailbox is watched, not at start-up
    )

CURSOR_PREFIX = "subscription-cursor:"


class MailboxKind:
    kind: Kind = "mailbox"
    effect = Effect.MAILBOX  # reads the owner's own mail; nothing leaves

    def __init__(
        self,
        accounts: MailAccounts | None,
        state: ChannelState,
        leases: WatchLeases | None = None,
    ) -> None:
        self._accounts = accounts
        self._state = state
        self._leases = leases  # on Redis: one daemon of the fleet watches each subscription

    def reach(self, request: ConnectRequest) -> Reach:
        return Reach()

    async def plan(self, request: ConnectRequest, asking: Asking) -> Planned:
        if not self._accounts:
            raise Refusal(
                "kind: no mail account is configured ([[email.accounts]]), so there is no "
                "mailbox to watch"
            )
        try:
            account = self._accounts.get(request.account)
        except KeyError as exc:
            raise Refusal(f"account: {exc.args[0]}") from None
        if not request.sender and not request.subject:
            raise Refusal(
                "sender or subject: a mailbox subscription needs a filter, e.g. "
                '{"kind": "mailbox", "sender": "*@ci.example.com", "subject": "*failed*"}'
            )
        if request.regex:
            for name in ("sender", "subject"):
                value = getattr(request, name)
                if value:
                    try:
                        re.compile(value)
                    except re.error as exc:
                        raise Refusal(f"{name}: not a valid regular expression ({exc})") from None
        # The folder is read now: a name that does not exist is this call's error, and
        # mail is new from this moment, not from when the watch first connects.
        from wakeful.channels.email.cursor import Cursor
        from wakeful.channels.email.imap import with_mailbox
        from wakeful.sources.subscriptions.kinds.mailbox_watch import SubscriptionCursor

        folder = request.folder
        try:
            uidvalidity, uidnext = await with_mailbox(
                account.config, account.password, None, lambda conn: conn.select(folder)
            )
        except Exception as exc:  # the server's words say what is wrong (no such folder, …)
            raise Refusal(f"folder: cannot open {account.name}/{folder}: {exc}") from None
        await SubscriptionCursor(self._state, asking.sub_id).set_cursor(
            account.name, folder, Cursor(uidvalidity, max(0, uidnext - 1))
        )
        return Planned(
            {
                "account": account.name,
                "folder": request.folder,
                "sender": request.sender,
                "subject": request.subject,
                "regex": request.regex,
            }
        )

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        from wakeful.sources.subscriptions.kinds.mailbox_watch import (
            FilteredWatcher,
            SubscriptionCursor,
        )

        if not self._accounts:
            raise RuntimeError("no mail account is configured any more")
        account = self._accounts.get(sub.spec["account"])
        config = account.config.model_copy(update={"session": sub.session, "initial_sync": "new"})

        async def submit(event: Event) -> SubmitResult:
            await fire(tagged(event, sub))
            return SubmitResult(event.id, False)

        def health(state: MailboxHealth) -> None:
            pass  # the subscription's detail says what it is doing (below)

        cursors = SubscriptionCursor(self._state, sub.id)
        watcher = FilteredWatcher(
            sub, config, account.password, sub.spec["folder"], cursors, submit, health
        )
        watching = f"watching {account.name}/{sub.spec['folder']}"
        if self._leases is None:
            await report(watching)
            await watcher.run()
            return

        async def run_holding() -> None:
            await report(watching)
            await watcher.run()

        await report("standby: another daemon of the fleet watches it, or will")
        await self._leases.hold(sub.id, run_holding, on_lost=watcher.standby)

    def disarmed(self, sub: Subscription) -> None:
        pass  # the cursor key is removed with the record (see arming.disconnect)
