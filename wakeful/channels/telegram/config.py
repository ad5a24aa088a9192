"""``[[chat.telegram]]``: one entry per Telegram bot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig, base_url
from wakeful.kernel.field_defaults import empty_list

# What Telegram accepts as a webhook secret_token (setWebhook).
SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class TelegramConfig(ChatPlatformConfig):
    """One bot: where its token is, how updates arrive, who may talk to it."""

    bot_token_file: Path = Field(
        description="File holding the bot token from @BotFather (never logged).",
        examples=["/etc/wakeful/telegram-token"],
    )
    api_base: str = Field(
        default="https://api.telegram.org",
        description="Bot API address; tests and self-hosted Bot API servers set it.",
        examples=["https://api.telegram.org"],
    )
    mode: Literal["polling", "webhook"] = Field(
        default="polling",
        description=(
            "How updates arrive: long polling (getUpdates; works behind NAT) or a webhook "
            "(Telegram POSTs to public_url; needs secret_token_file)."
        ),
        examples=["polling"],
    )
    allowed_user_ids: list[int] = Field(
        default_factory=empty_list,
        description=(
            "Telegram user ids of the owners; anyone else gets a pairing code "
            "(`wakeful pairing approve telegram <code>`)."
        ),
        examples=[[123456789]],
    )
    public_url: str | None = Field(
        default=None,
        description=(
            "Webhook mode: the https:// address Telegram reaches the daemon at (a reverse "
            "proxy; add its host name to [server] allowed_hosts); updates go to "
            "<public_url>/chat/telegram/<name>/webhook."
        ),
        examples=["https://wakeful.example.com"],
    )
    secret_token_file: Path | None = Field(
        default=None,
        description=(
            "Webhook mode: file holding the secret Telegram sends in "
            "X-Telegram-Bot-Api-Secret-Token (1-256 of A-Z a-z 0-9 _ -)."
        ),
        examples=["/etc/wakeful/telegram-webhook-secret"],
    )
    poll_timeout_s: int = Field(
        default=30,
        ge=1,
        le=50,
        description="Polling mode: how long one getUpdates long poll waits for news.",
        examples=[30],
    )
    typing_every_s: float = Field(
        default=4.0,
        gt=0,
        description="How often 'typing…' is renewed while a run is active (it lasts 5 s).",
        examples=[4.0],
    )
    retry_min_s: float = Field(
        default=1.0, gt=0, description="First backoff after a Bot API failure.", examples=[1.0]
    )
    retry_max_s: float = Field(
        default=60.0, gt=0, description="Longest backoff between Bot API retries.", examples=[60.0]
    )

    @field_validator("api_base", "public_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        return base_url(value, f"must start with http:// or https://, not {value!r}")

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
