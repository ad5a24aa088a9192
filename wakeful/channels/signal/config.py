"""``[[chat.signal]]``: one Signal account, reached through its signal-cli daemon."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig
from wakeful.kernel.config_base import read_secret
from wakeful.kernel.field_defaults import empty_list

# A phone number in E.164 form, or an ACI (a UUID): the two ways Signal names a person.
NUMBER = re.compile(r"^\+[1-9][0-9]{6,14}$")
ACI = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Group ids are 32 bytes, base64: 44 characters ending in '='.
GROUP_ID = re.compile(r"^[A-Za-z0-9+/]{43}=$")
TCP_URL = re.compile(r"^tcp://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$")


class SignalConfig(ChatPlatformConfig):
    """One account: where its signal-cli daemon listens and whom it answers."""

    url: str = Field(
        default="http://127.0.0.1:8080",
        examples=["http://127.0.0.1:8080"],
        description=(
            "Where the signal-cli daemon listens: its HTTP address (`daemon --http "
            "127.0.0.1:8080`; events from <url>/api/v1/events, calls to <url>/api/v1/rpc), "
            "or tcp://127.0.0.1:7583 (`daemon --tcp`), or unix:///run/signal-cli/socket "
            "(`daemon --socket`)."
        ),
    )
    account: str | None = Field(
        default=None,
        examples=["+15550001111"],
        description=(
            "The account's number, sent with every call: needed only when the daemon serves "
            "several accounts (started without -a)."
        ),
    )
    allowed_users: list[str] = Field(
        default_factory=empty_list,
        examples=[["+15552223333", "0d2e5f4c-7b1a-4c3e-9f6d-2a8b1c0e3d4f"]],
        description=(
            "The owners: phone numbers (+15552223333) and/or ACIs (the uuid signal-cli shows "
            "as sourceUuid); anyone else gets a pairing code (`wakeful pairing approve "
            "signal <code>`)."
        ),
    )
    allowed_groups: list[str] = Field(
        default_factory=empty_list,
        examples=[["Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI="]],
        description=(
            "Group ids (base64, `signal-cli listGroups`) whose messages from allowed users "
            "are heard and answered in the group; every other group is ignored."
        ),
    )
    auth_token_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/signal-proxy-token"],
        description=(
            "File holding a bearer token for a reverse proxy in front of the daemon "
            "(signal-cli itself has none: keep it on 127.0.0.1)."
        ),
    )
    read_receipts: bool = Field(
        default=True,
        examples=[True],
        description="Mark each message the agent takes as read (sendReceipt).",
    )
    typing_every_s: float = Field(
        default=10.0,
        gt=0,
        examples=[10.0],
        description="How often 'typing…' is renewed while a run works (Signal shows it ~15 s).",
    )
    retry_min_s: float = Field(
        default=1.0, gt=0, examples=[1.0], description="First backoff after a daemon failure."
    )
    retry_max_s: float = Field(
        default=60.0, gt=0, examples=[60.0], description="Longest backoff between retries."
    )

    @field_validator("url")
    @classmethod
    def _daemon_url(cls, value: str) -> str:
        if value.startswith(("http://", "https://")):
            return value.rstrip("/")
        if TCP_URL.match(value) or (value.startswith("unix:///") and len(value) > 8):
            return value
        raise ValueError(
            f"{value!r} is not where a signal-cli daemon listens: give its HTTP address "
            "'http://127.0.0.1:8080', or 'tcp://127.0.0.1:7583', or 'unix:///path/to/socket'"
        )

    @field_validator("account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        if value is not None and not NUMBER.match(value):
            raise ValueError(
                f"{value!r} is not a phone number with its country code, e.g. +15550001111"
            )
        return value

    @field_validator("allowed_users")
    @classmethod
    def _users(cls, value: list[str]) -> list[str]:
        bad = [user for user in value if not (NUMBER.match(user) or ACI.match(user))]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is neither a phone number with its country code (+15552223333) "
                "nor an ACI uuid"
            )
        return [user.lower() if ACI.match(user) else user for user in value]

    @field_validator("allowed_groups")
    @classmethod
    def _groups(cls, value: list[str]) -> list[str]:
        bad = [group for group in value if not GROUP_ID.match(group)]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not a Signal group id: copy the 44-character base64 id "
                "`signal-cli listGroups` shows"
            )
        return value

    @model_validator(mode="after")
    def _token_needs_http(self) -> SignalConfig:
        if self.auth_token_file is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(
                "auth_token_file is for an HTTP url (a proxy in front of `daemon --http`); "
                "the tcp:// and unix:// modes take no token: remove it"
            )
        return self

    def auth_token(self) -> str | None:
        """Read from auth_token_file (if any), and redacted from every log line from then on."""
        if self.auth_token_file is None:
            return None
        return read_secret(self.auth_token_file, f"chat.signal[{self.name}].auth_token_file")
