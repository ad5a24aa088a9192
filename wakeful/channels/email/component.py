"""The email component: mailbox watchers, one outbox channel per account
(``email:<account>``), and the mail and calendar tools.

Configured like any component; its run phase owns a task group in which one
watcher per (account, mailbox) runs; the daemon stopping cancels them (a
blocked IDLE is woken by shutting its socket). Its state is the store's state
port (``mail_state.py``), whichever backend that is. Each watcher holds the
mailbox's named lease (``email:watch:<account>:<mailbox>``): with daemons of a
fleet sharing Redis, one daemon watches a mailbox at a time, the others keep
its watcher in ``standby`` (no IMAP connection, no IDLE) and take over when the
lease lapses — the holder stopped, died, or lost touch with Redis. Sending is the shared outbox's
(``channel.py``, ``drafts.py``), including what a crash left unsettled.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.channels.email.accounts import MailAccount, MailAccounts
from wakeful.channels.email.calendar_tools import CheckCalendarConflicts, ListCalendarEvents
from wakeful.channels.email.channel import EmailChannel
from wakeful.channels.email.drafts import Drafts
from wakeful.channels.email.health import MailboxHealth
from wakeful.channels.email.mail_state import MailState
from wakeful.channels.email.old_state import import_old_tables
from wakeful.channels.email.tools.compose import DraftEmail, SendEmail
from wakeful.channels.email.tools.manage import ArchiveEmail, FlagEmail, MoveEmail
from wakeful.channels.email.tools.read import ReadEmail, SearchEmail
from wakeful.channels.email.unread_check import UnreadMailCheck
from wakeful.channels.email.watcher import MailboxWatcher
from wakeful.core.components.context import ComponentHealth, ComponentSetup

log = structlog.get_logger(__name__)


def _register_tools(setup: ComponentSetup, accounts: MailAccounts, drafts: Drafts) -> None:
    calendar = setup.settings.email.calendar_path
    if accounts:
        for tool in (
            ReadEmail(accounts),
            SearchEmail(accounts),
            MoveEmail(accounts),
            ArchiveEmail(accounts),
            FlagEmail(accounts),
            DraftEmail(accounts, drafts),
            SendEmail(drafts),
        ):
            setup.add_tool(tool)
    if calendar is not None:
        setup.add_tool(ListCalendarEvents(calendar))
        setup.add_tool(CheckCalendarConflicts(calendar))


def _watchers(setup: ComponentSetup, accounts: MailAccounts, db: MailState) -> list[MailboxWatcher]:
    def publish(health: MailboxHealth) -> None:
        setup.set_health(health.key, ComponentHealth(health.ok, health.detail()))

    watchers = []
    for name in accounts.names():
        account = accounts.get(name)
        for mailbox in account.config.mailboxes:
            watcher = MailboxWatcher(
                account.config,
                account.password,
                mailbox,
                db,
                setup.submit,
                publish,
                count_unseen=setup.settings.heartbeat.enabled,
            )
            publish(watcher.health)
            watchers.append(watcher)
    return watchers


class EmailComponent:
    """Mailbox watchers (IMAP IDLE), an outbox channel per account, the mail and
    calendar tools."""

    name = "email"
    lease_ttl_s = 15.0  # with the Redis backend: how soon another daemon takes a mailbox over

    async def configure(self, setup: ComponentSetup) -> None:
        section = setup.settings.email
        accounts = MailAccounts([MailAccount(a, a.resolve_password()) for a in section.accounts])
        for account in section.accounts:
            warning = account.owner_trust_warning()
            if warning is not None:
                log.warning(warning)
        state = setup.store.state()
        # With daemons sharing a Redis store, one watches each mailbox at a time.
        self.coordination = await setup.resources.enter_async_context(
            setup.store.coordination("email")
        )
        db = MailState(state)
        await import_old_tables(db, setup.data_dir / "wakeful.db")
        self.accounts = accounts
        channels = {name: EmailChannel(accounts.get(name)) for name in accounts.names()}
        for channel in channels.values():
            setup.add_channel(channel)
        self.drafts = Drafts(db, channels, setup.deliver_message)
        _register_tools(setup, accounts, self.drafts)
        self.watchers = _watchers(setup, accounts, db)
        watchers = self.watchers
        if self.watchers and setup.settings.heartbeat.enabled:
            setup.add_check("unread mail", UnreadMailCheck(self.watchers))
        trust = {a.name: a.owner_trust() for a in section.accounts}
        setup.add_status(
            "email",
            lambda: {"mailboxes": [w.health.describe() for w in watchers], "owner_trust": trust},
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # Cancelled when the daemon stops; a blocked IDLE is woken by shutting its socket.
        async with anyio.create_task_group() as group:
            for watcher in self.watchers:
                group.start_soon(self._watch, watcher, name=f"watch {watcher.health.key}")
            task_status.started()

    async def _watch(self, watcher: MailboxWatcher) -> None:
        """Run ``watcher`` for as long as the daemon runs, while holding its mailbox's lease."""
        if self.coordination is None:  # one daemon owns the store: it watches every mailbox
            await watcher.run()
            return
        name = f"email:watch:{watcher.account.name}:{watcher.mailbox}"
        lease = self.coordination.lease(name, ttl_s=self.lease_ttl_s)
        watcher.standby()  # until the lease is ours
        await lease.hold(watcher.run, on_lost=watcher.standby)
