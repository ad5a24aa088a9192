"""``[[chat.matrix]]``: one Matrix account the daemon listens and answers as."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig, base_url
from wakeful.kernel.config_base import read_secret
from wakeful.kernel.field_defaults import empty_list

MATRIX_USER_ID = re.compile(r"^@[^:\s]+:\S+$")


class MatrixConfig(ChatPlatformConfig):
    """One account: where its homeserver is, how it logs in, whom it answers."""

    homeserver: str = Field(
        examples=["https://matrix.example.org"],
        description="The homeserver's client-server API base URL.",
    )
    user_id: str = Field(
        examples=["@wakeful:example.org"], description="The account's full Matrix user id."
    )
    access_token_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/matrix-token"],
        description="File holding the account's access token (or set password_file).",
    )
    password_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/matrix-password"],
        description=(
            "File holding the account's password: wakeful logs in (m.login.password) at "
            "start and keeps the token in memory only."
        ),
    )
    device_id: str = Field(
        default="",
        examples=["WAKEFUL_HOME"],
        description=(
            "Device to log in as with password_file (default WAKEFUL_<NAME>); the same "
            "device keeps Matrix's dedup of retried sends across restarts."
        ),
    )
    allowed_users: list[str] = Field(
        default_factory=empty_list,
        examples=[["@me:example.org"]],
        description=(
            "Users whose messages reach the agent and whose invites are joined (anyone "
            "else's direct-chat invite is joined only to tell them a pairing code)."
        ),
    )
    msgtype: Literal["m.notice", "m.text"] = Field(
        default="m.notice",
        description=(
            "The msgtype of everything this account sends. Matrix's convention is m.notice "
            "for what a program writes: other bots never answer a notice, so two bots in "
            "one room cannot talk to each other forever (wakeful itself never answers "
            "one). m.text shows replies like a person's in clients that grey out notices."
        ),
    )
    sync_timeout_s: float = Field(
        default=30.0,
        ge=0,
        le=300,
        examples=[30],
        description="How long one /sync long poll waits for news.",
    )
    typing_every_s: float = Field(
        default=20.0,
        gt=0,
        examples=[20],
        description="How often the typing notice is renewed while a run works.",
    )

    @field_validator("homeserver")
    @classmethod
    def _homeserver(cls, value: str) -> str:
        return base_url(
            value, "must be the homeserver's base URL, e.g. 'https://matrix.example.org'"
        )

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, value: str) -> str:
        if not MATRIX_USER_ID.match(value):
            raise ValueError("must be a full Matrix user id, e.g. '@wakeful:example.org'")
        return value

    @field_validator("allowed_users")
    @classmethod
    def _allowed(cls, value: list[str]) -> list[str]:
        bad = [user for user in value if not MATRIX_USER_ID.match(user)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a full Matrix user id like '@me:example.org'")
        return value

    @model_validator(mode="after")
    def _one_credential(self) -> MatrixConfig:
        if (self.access_token_file is None) == (self.password_file is None):
            raise ValueError("set exactly one of access_token_file or password_file")
        return self

    @property
    def key(self) -> str:
        return f"chat.matrix[{self.name}]"

    @property
    def device(self) -> str:
        return self.device_id or f"WAKEFUL_{self.name.upper()}"

    def credential(self) -> tuple[str, str]:
        """("token", access token) or ("password", password), read from its file and
        redacted from every log line from then on."""
        if self.access_token_file is not None:
            token = read_secret(self.access_token_file, f"{self.key}.access_token_file")
            return "token", token
        assert self.password_file is not None
        return "password", read_secret(self.password_file, f"{self.key}.password_file")
