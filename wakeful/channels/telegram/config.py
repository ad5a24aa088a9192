"""``[[chat.telegram]]``: one entry per Telegram bot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from wakeful.daemon.config_base import Section, reject_repeated_names
from wakeful.events import SESSION_PATTERN

# The name is part of the webhook route /chat/telegram/<name>/webhook and of state keys.
BOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# What Telegram accepts as a webhook secret_token (setWebhook).
SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class TelegramConfig(Section):
    """One bot: where its token is, how updates arrive, who may talk to it."""

    name: str = Field(min_length=1, examples=["tg"])
    bot_token_file: Path = Field(examples=["/etc/wakeful/telegram-token"])
    api_base: str = Field(default="https://api.telegram.org", examples=["https://api.telegram.org"])
    mode: Literal["polling", "webhook"] = Field(default="polling", examples=["polling"])
    allowed_user_ids: list[int] = Field(default_factory=list, examples=[[123456789]])
    session: str = Field(default="main", examples=["main"])
    # Webhook mode: Telegram POSTs to <public_url>/chat/telegram/<name>/webhook and sends
    # the secret in X-Telegram-Bot-Api-Secret-Token.
    public_url: str | None = Field(default=None, examples=["https://wakeful.example.com"])
    secret_token_file: Path | None = Field(
        default=None, examples=["/etc/wakeful/telegram-webhook-secret"]
    )
    poll_timeout_s: int = Field(default=30, ge=0, le=50, examples=[30])
    typing_every_s: float = Field(default=4.0, gt=0, examples=[4.0])
    retry_min_s: float = Field(default=1.0, gt=0, examples=[1.0])
    retry_max_s: float = Field(default=60.0, gt=0, examples=[60.0])

    @field_validator("name")
    @classmethod
    def _url_safe_name(cls, value: str) -> str:
        if not BOT_NAME.match(value):
            raise ValueError(
                "must be 1-64 letters, digits and _.- (it is in the URL /chat/telegram/<name>/...)"
            )
        return value

    @field_validator("session")
    @classmethod
    def _session_name(cls, value: str) -> str:
        if not SESSION_PATTERN.match(value):
            raise ValueError("must be 'per-user' or a session name such as 'main'")
        return value

    @field_validator("api_base", "public_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, not {value!r}")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _webhook_needs(self) -> TelegramConfig:
        if self.mode == "webhook" and (self.public_url is None or self.secret_token_file is None):
            raise ValueError(
                f"chat.telegram '{self.name}': mode = \"webhook\" needs public_url (the "
                "https:// address Telegram reaches the daemon at) and secret_token_file (a "
                "file holding 1-256 characters of A-Z a-z 0-9 _ -)"
            )
        return self

    @property
    def webhook_path(self) -> str:
        return f"/chat/telegram/{self.name}/webhook"


class TelegramSettings(Section):
    """The ``telegram`` list of the ``[chat]`` section."""

    telegram: list[TelegramConfig] = Field(default_factory=list)

    @field_validator("telegram")
    @classmethod
    def _unique_names(cls, bots: list[TelegramConfig]) -> list[TelegramConfig]:
        reject_repeated_names([bot.name for bot in bots], "chat.telegram")
        return bots
