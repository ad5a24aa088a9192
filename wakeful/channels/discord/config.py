"""``[[chat.discord]]``: one entry per Discord bot."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig, base_url
from wakeful.kernel.field_defaults import empty_list

SNOWFLAKE_HELP = "Discord ids (snowflakes) are digits only; copy them with Developer Mode on"


class DiscordConfig(ChatPlatformConfig):
    """One bot: where its token is, who may talk to it, in which guild channels it listens."""

    bot_token_file: Path = Field(
        description="File holding the bot token from the Developer Portal's Bot page (never "
        "logged).",
        examples=["/etc/wakeful/discord-token"],
    )
    allowed_user_ids: list[str] = Field(
        default_factory=empty_list,
        description=(
            "Discord user ids of the owners (Developer Mode → Copy User ID); anyone else gets "
            "a pairing code (`wakeful pairing approve discord <code>`)."
        ),
        examples=[["80351110224678912"]],
    )
    allowed_channel_ids: list[str] = Field(
        default_factory=empty_list,
        description=(
            "Guild (server) text channels the bot listens in, and the threads under them; "
            "direct messages are always heard. Empty: direct messages only."
        ),
        examples=[["1051234567890123456"]],
    )
    api_base: str = Field(
        default="https://discord.com/api/v10",
        description="REST API address (the Gateway's comes from GET /gateway/bot); tests set it.",
        examples=["https://discord.com/api/v10"],
    )
    typing_every_s: float = Field(
        default=8.0,
        gt=0,
        description="How often 'typing…' is renewed while a run is active (it lasts 10 s).",
        examples=[8.0],
    )
    retry_min_s: float = Field(
        default=1.0, gt=0, description="First backoff after a Discord failure.", examples=[1.0]
    )
    retry_max_s: float = Field(
        default=60.0, gt=0, description="Longest backoff between Discord retries.", examples=[60.0]
    )

    @field_validator("allowed_user_ids", "allowed_channel_ids", mode="before")
    @classmethod
    def _snowflakes(cls, value: object) -> object:
        # TOML users write the ids as numbers too; Discord's JSON carries them as strings.
        if not isinstance(value, list):
            return value
        ids = [str(item) if isinstance(item, int) else item for item in value]
        for item in ids:
            if not (isinstance(item, str) and item.isdigit()):
                raise ValueError(f"{item!r} is not a Discord id: {SNOWFLAKE_HELP}")
        return ids

    @field_validator("api_base")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return base_url(value, f"must start with http:// or https://, not {value!r}")

    @model_validator(mode="after")
    def _websockets_installed(self) -> DiscordConfig:
        if importlib.util.find_spec("websockets") is None:
            raise ValueError(
                f"chat.discord '{self.name}': the Gateway client needs the websockets "
                "package, which is not installed; install it with: pip install 'wakeful[discord]'"
            )
        return self
