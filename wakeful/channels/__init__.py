"""Where events come from and replies go out; the registry of daemon components.

:func:`default_components` is the one list the daemon's lifespan reads.
Adding a channel touches its own package and this list, no core module. A
channel whose configuration is empty is not even imported: the email stack
alone costs a noticeable part of start-up, and READY should not wait for what
is not used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the core's config imports this package: no run-time imports of the core
    from wakeful.daemon.components.context import Component
    from wakeful.daemon.config import Settings


def default_components(settings: Settings) -> list[Component]:
    """The components to configure and run, in order, fresh for one daemon."""
    from wakeful.channels.chat.component import PairingComponent
    from wakeful.channels.chat_web.component import ChatWebComponent
    from wakeful.channels.shell.component import ShellComponent
    from wakeful.channels.subscriptions.component import SubscriptionsComponent
    from wakeful.channels.timers.component import TimersComponent
    from wakeful.channels.webhook.component import WebhookComponent
    from wakeful.subagents.component import SubagentsComponent

    shell = ShellComponent()
    webhooks = WebhookComponent()
    components: list[Component] = [
        webhooks,
        shell,
        TimersComponent(),
        PairingComponent(),
        ChatWebComponent(),
        SubagentsComponent(),
    ]
    if settings.system.enabled:
        from wakeful.channels.system.component import SystemComponent

        components.append(SystemComponent())
    email = None
    if settings.email.accounts or settings.email.calendar_path is not None:
        from wakeful.channels.email.component import EmailComponent

        email = EmailComponent()
        components.append(email)
    if settings.chat.telegram:
        from wakeful.channels.telegram.component import TelegramComponent

        components += [TelegramComponent(bot) for bot in settings.chat.telegram]
    if settings.chat.slack:
        from wakeful.channels.slack.component import SlackComponent

        components += [SlackComponent(app) for app in settings.chat.slack]
    if settings.chat.matrix:
        from wakeful.channels.matrix.component import MatrixComponent

        components += [MatrixComponent(account) for account in settings.chat.matrix]
    if settings.mcp.servers:
        from wakeful.mcp.component import McpComponent

        components.append(McpComponent())
    # After the shell, email and webhook components, whose task manager, accounts and
    # hooks it uses.
    components.append(SubscriptionsComponent(shell, email, webhooks))
    return components
