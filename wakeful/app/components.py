"""The registry of daemon components: channels, sources, MCP and subagents.

:data:`COMPONENTS` is the one list the daemon's lifespan reads (through
:func:`default_components`). Adding a channel or a source touches its own
package and one line here, no core module. Each line names its component by
import path, so a component whose configuration is empty is not even
imported: the email stack alone costs a noticeable part of start-up, and
READY should not wait for what is not used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from wakeful.app.config import Settings
    from wakeful.core.components.context import Component


def _always(settings: Settings) -> bool:
    return True


@dataclass(frozen=True)
class Registration:
    """One component, or one per configured item, and when the daemon runs it."""

    # "package.module:Factory", a Component class or a function returning one;
    # imported only when the daemon runs it.
    path: str
    # Whether it runs with these settings (e.g. its section names an account).
    when: Callable[[Settings], bool] = _always
    # One component per item (each bot, each account), built as Factory(item);
    # None: one component, built as Factory(). None run when the list is empty.
    each: Callable[[Settings], Sequence[Any]] | None = None

    def build(self, settings: Settings) -> list[Component]:
        if not self.when(settings):
            return []
        items = None if self.each is None else self.each(settings)
        if items is not None and not items:
            return []  # nothing configured: the package is not imported
        module, _, attribute = self.path.partition(":")
        factory = cast(
            "Callable[..., Component]", getattr(importlib.import_module(module), attribute)
        )
        return [factory()] if items is None else [factory(item) for item in items]


# In the order they are configured and run. The one line a new channel or source adds.
COMPONENTS: list[Registration] = [
    Registration("wakeful.sources.webhook.component:WebhookComponent"),
    Registration("wakeful.sources.shell.component:ShellComponent"),
    Registration("wakeful.sources.timers.component:TimersComponent"),
    Registration("wakeful.channels.chat.component:PairingComponent"),
    Registration("wakeful.channels.chat_web.component:ChatWebComponent"),
    Registration("wakeful.subagents.component:SubagentsComponent"),
    Registration(
        "wakeful.sources.system.component:SystemComponent", when=lambda s: s.system.enabled
    ),
    Registration(
        "wakeful.channels.email.component:EmailComponent",
        when=lambda s: bool(s.email.accounts) or s.email.calendar_path is not None,
    ),
    Registration(
        "wakeful.channels.telegram.component:TelegramComponent", each=lambda s: s.chat.telegram
    ),
    Registration("wakeful.channels.slack.component:SlackComponent", each=lambda s: s.chat.slack),
    Registration("wakeful.channels.matrix.component:MatrixComponent", each=lambda s: s.chat.matrix),
    Registration("wakeful.channels.signal.component:SignalComponent", each=lambda s: s.chat.signal),
    Registration(
        "wakeful.channels.whatsapp.component:WhatsAppComponent", each=lambda s: s.chat.whatsapp
    ),
    Registration(
        "wakeful.channels.discord.component:DiscordComponent", each=lambda s: s.chat.discord
    ),
    Registration("wakeful.channels.xmpp.component:XmppComponent", each=lambda s: s.chat.xmpp),
    Registration("wakeful.mcp.component:McpComponent", when=lambda s: bool(s.mcp.servers)),
    Registration("wakeful.budget.component:BudgetComponent", when=lambda s: s.budget.configured),
    Registration("wakeful.budget.usage_component:UsageComponent"),
    Registration("wakeful.memory.component:MemoryComponent", when=lambda s: s.memory.enabled),
    Registration(
        "wakeful.sources.heartbeat.component:HeartbeatComponent",
        when=lambda s: s.heartbeat.enabled,
    ),
]


def default_components(settings: Settings) -> list[Component]:
    """The components to configure and run, in order, fresh for one daemon."""
    from wakeful.sources.subscriptions.component import SubscriptionsComponent

    components = [c for registration in COMPONENTS for c in registration.build(settings)]
    # Last, and not a line above: subscriptions build on the shell's task manager,
    # the email accounts and the webhook hooks, so they take those components.
    by_name: dict[str, Any] = {c.name: c for c in components}
    subscriptions = SubscriptionsComponent(
        by_name["shell"], by_name.get("email"), by_name.get("webhooks")
    )
    return [*components, subscriptions]
