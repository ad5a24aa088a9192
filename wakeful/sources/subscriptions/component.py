"""The subscriptions component: the tools, the webhook route, the status, the watches.

It is built with the shell, email and webhook components it borrows from (the
shell manager's output patterns, the mail accounts, the configured hooks),
configured after them, and
re-arms every stored subscription when its run phase starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus
from starlette.routing import Route

from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.sources.subscriptions.arming import Subscriptions
from wakeful.sources.subscriptions.fleet import WatchLeases, change_notices
from wakeful.sources.subscriptions.kinds.base import SourceKind
from wakeful.sources.subscriptions.kinds.files import FileKind
from wakeful.sources.subscriptions.kinds.hook_filter import HookFilters
from wakeful.sources.subscriptions.kinds.http_check import HttpCheckKind
from wakeful.sources.subscriptions.kinds.mailbox import MailboxKind
from wakeful.sources.subscriptions.kinds.shell_output import ShellOutputKind
from wakeful.sources.subscriptions.kinds.webhook import ROUTE, WebhookKind
from wakeful.sources.subscriptions.records import SubscriptionBook
from wakeful.sources.subscriptions.stale_check import StaleSubscriptionsCheck
from wakeful.sources.subscriptions.tools import ConnectChannel, DisconnectChannel, ListChannels

if TYPE_CHECKING:
    from wakeful.channels.email.component import EmailComponent
    from wakeful.sources.shell.component import ShellComponent
    from wakeful.sources.webhook.component import WebhookComponent


class SubscriptionsComponent:
    """connect_channel / list_channels / disconnect_channel and the sources they arm."""

    name = "subscriptions"

    def __init__(
        self,
        shell: ShellComponent,
        email: EmailComponent | None = None,
        webhooks: WebhookComponent | None = None,
    ) -> None:
        self._shell = shell
        self._email = email
        self._webhooks = webhooks

    async def configure(self, setup: ComponentSetup) -> None:
        section = setup.settings.subscriptions
        book = SubscriptionBook(setup.state)
        await book.load()
        kinds: dict[str, SourceKind] = {}
        # Where daemons share the store: the leases that let one of them watch a mailbox
        # or check a URL, and the notices that tell the others of a change.
        coordination = await setup.resources.enter_async_context(
            setup.store.coordination("subscriptions")
        )
        leases = notices = None
        if coordination is not None:
            leases = WatchLeases(coordination)
            notices = change_notices(coordination)
        subs = Subscriptions(book, kinds, setup.submit, setup.state, section, notices)
        hook_filters = None
        if self._webhooks is not None:
            ingress = self._webhooks.ingress
            hook_filters = HookFilters(
                lambda: ingress.hook_names, book.active, subs.fire_for, subs.count
            )
            ingress.add_tap(hook_filters)
        webhook = WebhookKind(book.get, subs.fire_for, hook_filters)
        for kind in (
            MailboxKind(self._email.accounts if self._email else None, setup.state, leases),
            webhook,
            FileKind(section.watch_paths, section.debounce_ms),
            ShellOutputKind(self._shell.manager),
            HttpCheckKind(
                tuple(setup.settings.safety.http_allow),
                section.min_http_interval_s,
                leases,
                book.reread,
            ),
        ):
            kinds[kind.kind] = kind
        subs.kinds.update(kinds)
        self.subscriptions = subs
        setup.add_tool(ConnectChannel(subs, section.min_http_interval_s))
        setup.add_tool(ListChannels(subs))
        setup.add_tool(DisconnectChannel(subs))
        setup.add_route(Route(ROUTE, webhook.handle, methods=["POST"]))
        setup.add_status("subscriptions", subs.status)
        setup.add_check("stale subscriptions", StaleSubscriptionsCheck(book))
        setup.set_health("subscriptions", ComponentHealth(True, "ready"))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # This group owns every watch; the daemon stopping cancels them all.
        async with anyio.create_task_group() as group:
            self.subscriptions.start(group)
            subs = self.subscriptions
            if subs.notices is not None:
                await group.start(subs.notices.follow, subs.apply_change, subs.resync)
            task_status.started()
            await anyio.sleep_forever()
