"""The ``[chat]`` table: one list of accounts per platform (``[[chat.telegram]]``, …).

Each platform defines its entry in its own package's ``config.py`` and adds one
field here; the names must be unique within a platform (they name the channel
``chat:<platform>:<name>``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from wakeful.channels.chat.config import ChatPlatformConfig
from wakeful.channels.discord.config import DiscordConfig
from wakeful.channels.irc.config import IrcConfig
from wakeful.channels.matrix.config import MatrixConfig
from wakeful.channels.signal.config import SignalConfig
from wakeful.channels.slack.config import SlackConfig
from wakeful.channels.telegram.config import TelegramConfig
from wakeful.channels.whatsapp.config import WhatsAppConfig
from wakeful.channels.xmpp.config import XmppConfig
from wakeful.kernel.config_base import Section, reject_repeated_names
from wakeful.kernel.field_defaults import empty_list


class ChatSection(Section):
    """Chat platforms the daemon listens on; empty lists start nothing."""

    telegram: list[TelegramConfig] = Field(
        default_factory=empty_list, description="Telegram bots, one [[chat.telegram]] table each."
    )
    slack: list[SlackConfig] = Field(
        default_factory=empty_list,
        description="Slack apps, one [[chat.slack]] table each (their Events API request URL "
        "is /chat/slack/<name>/events).",
    )
    matrix: list[MatrixConfig] = Field(
        default_factory=empty_list, description="Matrix accounts, one [[chat.matrix]] table each."
    )
    signal: list[SignalConfig] = Field(
        default_factory=empty_list,
        description="Signal accounts through a signal-cli daemon, one [[chat.signal]] table each.",
    )
    whatsapp: list[WhatsAppConfig] = Field(
        default_factory=empty_list,
        description="WhatsApp business numbers (Cloud API), one [[chat.whatsapp]] table each "
        "(their webhook Callback URL is /chat/whatsapp/<name>/webhook).",
    )
    discord: list[DiscordConfig] = Field(
        default_factory=empty_list, description="Discord bots, one [[chat.discord]] table each."
    )
    xmpp: list[XmppConfig] = Field(
        default_factory=empty_list, description="XMPP accounts, one [[chat.xmpp]] table each."
    )

    irc: list[IrcConfig] = Field(
        default_factory=empty_list,
        description="IRC connections (a nick on a network), one [[chat.irc]] table each.",
    )

    @field_validator("telegram", "slack", "matrix", "signal", "whatsapp", "discord", "xmpp", "irc")
    @classmethod
    def _unique_names(
        cls, entries: list[ChatPlatformConfig], info: ValidationInfo
    ) -> list[ChatPlatformConfig]:
        reject_repeated_names([entry.name for entry in entries], f"chat.{info.field_name}")
        return entries


class ChatSettings(BaseModel):
    chat: ChatSection = Field(default_factory=ChatSection)
