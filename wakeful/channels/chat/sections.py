"""The ``[chat]`` table: one list of accounts per platform (``[[chat.telegram]]``, …).

Each platform defines its entry in its own package's ``config.py`` and adds one
field here; the names must be unique within a platform (they name the channel
``chat:<platform>:<name>``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from wakeful.channels.matrix.config import MatrixConfig
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

    matrix: list[MatrixConfig] = Field(
        default_factory=list, description="Matrix accounts, one [[chat.matrix]] table each."
    )

    @field_validator("telegram")
    @classmethod
    def _unique_telegram_names(cls, bots: list[TelegramConfig]) -> list[TelegramConfig]:
        reject_repeated_names([bot.name for bot in bots], "chat.telegram")
        return bots

    @field_validator("matrix")
    @classmethod
    def _unique_matrix_names(cls, accounts: list[MatrixConfig]) -> list[MatrixConfig]:
        reject_repeated_names([account.name for account in accounts], "chat.matrix")
        return accounts


class ChatSettings(BaseModel):
    chat: ChatSection = Field(default_factory=ChatSection)
