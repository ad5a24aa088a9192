"""``[[chat.matrix]]``: one Matrix account the daemon listens and answers as."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wakeful.daemon.config_base import read_secret_file
from wakeful.events import SESSION_PATTERN

MATRIX_USER_ID = re.compile(r"^@[^:\s]+:\S+$")
ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


class MatrixConfig(BaseModel):
    """One account: where its homeserver is, how it logs in, whom it answers."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(examples=["home"])
    session: str = Field(default="main", examples=["main"])
    homeserver: str = Field(examples=["https://matrix.example.org"])
    user_id: str = Field(examples=["@wakeful:example.org"])
    # One of the two: a token file is used as it is; a password logs in (m.login.password)
    # at start and the token it yields is kept in memory only.
    access_token_file: Path | None = Field(default=None, examples=["/etc/wakeful/matrix-token"])
    password_file: Path | None = Field(default=None, examples=["/etc/wakeful/matrix-password"])
    # Logging in again as the same device keeps Matrix's dedup of a retried send
    # (transaction ids are scoped to the device) across daemon restarts.
    device_id: str = Field(default="", examples=["WAKEFUL"])
    allowed_users: list[str] = Field(default_factory=list, examples=[["@me:example.org"]])
    sync_timeout_s: float = Field(default=30.0, ge=0, le=300, examples=[30])
    typing_every_s: float = Field(default=20.0, gt=0, examples=[20])

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not ACCOUNT_NAME.match(value):
            raise ValueError("must be 1-32 letters, digits, _ and - (e.g. 'home')")
        return value

    @field_validator("session")
    @classmethod
    def _session(cls, value: str) -> str:
        if value != "per-user" and not SESSION_PATTERN.match(value):
            raise ValueError("must be a session name such as 'main', or 'per-user'")
        return value

    @field_validator("homeserver")
    @classmethod
    def _homeserver(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be the homeserver's base URL, e.g. 'https://matrix.example.org'")
        return value.rstrip("/")

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
            raise ValueError(
                f"chat.matrix[{self.name}]: set exactly one of access_token_file or password_file"
            )
        return self

    @property
    def key(self) -> str:
        return f"chat.matrix[{self.name}]"

    @property
    def device(self) -> str:
        return self.device_id or f"WAKEFUL_{self.name.upper()}"

    def credential(self) -> tuple[str, str]:
        """("token", access token) or ("password", password), read from its file."""
        if self.access_token_file is not None:
            token = read_secret_file(self.access_token_file, f"{self.key}.access_token_file")
            return "token", token
        assert self.password_file is not None
        return "password", read_secret_file(self.password_file, f"{self.key}.password_file")


class MatrixSettings(BaseModel):
    """The ``matrix`` list inside ``[chat]``."""

    matrix: list[MatrixConfig] = Field(default_factory=list)
