"""The channels' config sections, composed for :class:`wakeful.app.config.Settings`.

Each channel package defines its TOML tables in its own ``config.py``; this is
the one list of them. Adding a channel with a section touches its own package,
this list and the component list in ``wakeful/app/components.py`` - no core module.
"""

from __future__ import annotations

from wakeful.app.chat_section import ChatSettings
from wakeful.budget.config import BudgetSettings
from wakeful.channels.email.config import EmailSettings
from wakeful.mcp.config import McpSettings
from wakeful.memory.config import MemorySettings
from wakeful.sources.heartbeat.config import HeartbeatSettings
from wakeful.sources.shell.config import ShellSettings
from wakeful.sources.subscriptions.config import SubscriptionSettings
from wakeful.sources.system.config import SystemSettings
from wakeful.sources.timers.config import TimerSettings
from wakeful.sources.webhook.config import WebhookSettings
from wakeful.subagents.config import SubagentSettings
from wakeful.telemetry.config import TelemetrySettings


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
    BudgetSettings,
    MemorySettings,
    HeartbeatSettings,
    TelemetrySettings,
):
    """Every channel's sections, as fields of one model."""
