"""The channels' config sections, composed for :class:`wakeful.daemon.config.Settings`.

Each channel package defines its TOML tables in its own ``config.py``; this is
the one list of them. Adding a channel with a section touches its own package,
this list and the component list in ``__init__.py`` - no core module.
"""

from __future__ import annotations

from wakeful.channels.chat.sections import ChatSettings
from wakeful.channels.email.config import EmailSettings
from wakeful.channels.shell.config import ShellSettings
from wakeful.channels.subscriptions.config import SubscriptionSettings
from wakeful.channels.system.config import SystemSettings
from wakeful.channels.timers.config import TimerSettings
from wakeful.channels.webhook.config import WebhookSettings
from wakeful.mcp.config import McpSettings
from wakeful.subagents.config import SubagentSettings


class ChannelSettings(
    ShellSettings,
    WebhookSettings,
    EmailSettings,
    TimerSettings,
    ChatSettings,
    SubscriptionSettings,
    SubagentSettings,
    McpSettings,
    SystemSettings,
):
    """Every channel's sections, as fields of one model."""
