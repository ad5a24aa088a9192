"""The ``[chat]`` table: one list of accounts per platform (``[[chat.telegram]]``, …).

Each platform defines its entry in its own package's ``config.py`` and adds one
field here; the names must be unique within a platform (they name the channel
``chat:<platform>:<name>``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from wakeful.channels.slack.config import SlackConfig
from wakeful.channels.telegram.config import TelegramConfig
from wakeful.daemon.config_base import Section, reject_repeated_names


class ChatSection(Section):
    """Chat platforms the daemon listens on; empty lists start nothing."""

    # Platforms add their field here, e.g.
    # telegram: list[TelegramConfig] = Field(default_factory=list, description=...)
    # with a field_validator calling config_base.reject_repeated_names.
    telegram: list[TelegramConfig] = Field(
        default_factory=list, description="Telegram bots, one [[chat.telegram]] table each."
    )

    @field_validator("telegram")
    @classmethod
    def _unique_telegram_names(cls, bots: list[TelegramConfig]) -> list[TelegramConfig]:
        reject_repeated_names([bot.name for bot in bots], "chat.telegram")
        return bots

    slack: list[SlackConfig] = Field(
        default_factory=list,
        description="Slack apps, one [[chat.slack]] table each (their Events API request URL "
        "is /chat/slack/<name>/events).",
    )

    @field_validator("slack")
    @classmethod
    def _unique_slack_names(cls, entries: list[SlackConfig]) -> list[SlackConfig]:
        reject_repeated_names([entry.name for entry in entries], "chat.slack")
        return entries


class ChatSettings(BaseModel):
    chat: ChatSection = Field(default_factory=ChatSection)
