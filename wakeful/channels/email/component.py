"""The email component: mailbox watchers, the outbox and the mail and calendar tools.

Entered by the daemon's lifespan like any component. It owns a task group
in which one watcher per (account, mailbox) runs, plus a one-off outbox
reconciliation of sends a crash left unconfirmed; leaving the context
cancels them (a blocked IDLE is woken by shutting its socket).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog

from wakeful.channels.email.accounts import MailAccount, MailAccounts
from wakeful.channels.email.db import MailDb
from wakeful.channels.email.health import MailboxHealth
from wakeful.channels.email.outbox import Outbox
from wakeful.channels.email.watcher import MailboxWatcher
from wakeful.daemon.components.context import ComponentHealth, Services
from wakeful.handlers.calendar import CheckCalendarConflicts, ListCalendarEvents
from wakeful.handlers.email.compose import DraftEmail, SendEmail
from wakeful.handlers.email.manage import ArchiveEmail, FlagEmail, MoveEmail
from wakeful.handlers.email.read import ReadEmail, SearchEmail

log = structlog.get_logger(__name__)


def _register_tools(services: Services, accounts: MailAccounts, outbox: Outbox) -> None:
    calendar = services.settings.email.calendar_path
    if accounts:
        for tool in (
            ReadEmail(accounts),
            SearchEmail(accounts),
            MoveEmail(accounts),
            ArchiveEmail(accounts),
            FlagEmail(accounts),
            DraftEmail(accounts, outbox),
            SendEmail(outbox),
        ):
            services.tools.register(tool)
    if calendar is not None:
        services.tools.register(ListCalendarEvents(calendar))
        services.tools.register(CheckCalendarConflicts(calendar))


def _watchers(services: Services, accounts: MailAccounts, db: MailDb) -> list[MailboxWatcher]:
    def publish(health: MailboxHealth) -> None:
        services.health[health.key] = ComponentHealth(health.ok, health.detail())

    watchers = []
    for name in accounts.names():
        account = accounts.get(name)
        for mailbox in account.config.mailboxes:
            watcher = MailboxWatcher(
                account.config, account.password, mailbox, db, services.submit, publish
            )
            publish(watcher.health)
            watchers.append(watcher)
    return watchers


async def _reconcile(outbox: Outbox) -> None:
    try:
        await outbox.reconcile_all()
    except Exception as exc:  # rows stay "sending" and are settled at their next send_email
        log.warning("outbox reconcile failed", error=f"{type(exc).__name__}: {exc}")


@asynccontextmanager
async def email_component(services: Services) -> AsyncIterator[object]:
    section = services.settings.email
    if not section.accounts and section.calendar_path is None:
        yield None
        return
    accounts = MailAccounts([MailAccount(a, a.resolve_password()) for a in section.accounts])
    db = MailDb(services.data_dir / "wakeful.db")
    try:
        outbox = Outbox(db, accounts)
        _register_tools(services, accounts, outbox)
        watchers = _watchers(services, accounts, db)

        def status() -> dict[str, Any]:
            return {"mailboxes": [w.health.describe() for w in watchers]}

        services.status_providers["email"] = status
        async with anyio.create_task_group() as group:
            if accounts:
                group.start_soon(_reconcile, outbox)
            for watcher in watchers:
                group.start_soon(watcher.run, name=f"watch {watcher.health.key}")
            try:
                yield outbox
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(db.close)
