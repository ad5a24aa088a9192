"""``[[chat.irc]]``: one IRC connection (one nick on one network) the daemon answers as."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig
from wakeful.kernel.config_base import read_secret
from wakeful.kernel.field_defaults import empty_list

# RFC 2812's nick, plus what networks allow beyond 9 characters.
NICK = re.compile(r"^[A-Za-z\[\]\\`_^{|}][A-Za-z0-9\[\]\\`_^{|}-]{0,29}$")
CHANNEL = re.compile(r"^[#&][^\s,\x07]{1,49}$")
# An owner: a services account the server vouches for, or a nick!user@host mask.
ACCOUNT_PREFIX = "account:"
MASK = re.compile(r"^[^\s!@]+![^\s!@]+@[^\s!@]+$")


class IrcConfig(ChatPlatformConfig):
    """One connection: which server, as whom, in which channels, who the owners are."""

    server: str = Field(examples=["irc.libera.chat"], description="IRC server host name.")
    port: int = Field(
        default=6697,
        ge=1,
        le=65535,
        examples=[6697],
        description="Server port: 6697 is TLS by convention, 6667 plain text.",
    )
    tls: bool = Field(
        default=True,
        examples=[True],
        description="Connect with TLS (certificate checked); false only for a server on "
        "loopback or a private network.",
    )
    nick: str = Field(
        examples=["wakeful"],
        description="The nick to take; when it is in use, _ is appended (wakeful_, wakeful__…).",
    )
    username: str = Field(
        default="wakeful",
        pattern=r"^[A-Za-z0-9_.-]{1,10}$",
        examples=["wakeful"],
        description="The user name sent with USER (the 'user' in nick!user@host).",
    )
    realname: str = Field(
        default="wakeful agent", examples=["wakeful agent"], description="The real name field."
    )
    channels: list[str] = Field(
        default_factory=empty_list,
        examples=[["#wakeful"]],
        description=(
            "Channels to join; there only messages addressed to the bot ('nick: …') count. "
            "Private messages are always taken."
        ),
    )
    allowed_users: list[str] = Field(
        default_factory=empty_list,
        examples=[["account:alice", "alice!~alice@203.0.113.7"]],
        description=(
            "The owners: 'account:<name>' (a services account, recognised only where the server "
            "sends account-tag) or a nick!user@host mask (* and ? match). Anyone else gets a "
            "pairing code (`wakeful pairing approve irc <code>`)."
        ),
    )
    sasl_username: str | None = Field(
        default=None,
        examples=["wakeful"],
        description="SASL PLAIN account name (with sasl_password_file); default: nick.",
    )
    sasl_password_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/irc-sasl-password"],
        description=(
            "File holding the services password for SASL PLAIN. When set, wakeful never "
            "connects without it: a server that offers no SASL is an error, retried."
        ),
    )
    server_password_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/irc-server-password"],
        description="File holding the server password (PASS), for servers that ask one.",
    )
    send_burst: int = Field(
        default=4,
        ge=1,
        le=20,
        examples=[4],
        description="Lines sent at once before the rate below applies (flood control).",
    )
    send_interval_s: float = Field(
        default=1.0,
        ge=0.05,
        le=10,
        examples=[1.0],
        description="Seconds between lines after the burst; servers kill a client that floods.",
    )
    retry_min_s: float = Field(
        default=2.0, gt=0, examples=[2.0], description="First back-off after a lost connection."
    )
    retry_max_s: float = Field(
        default=120.0,
        gt=0,
        examples=[120.0],
        description="Longest back-off between reconnection attempts.",
    )

    @field_validator("nick")
    @classmethod
    def _nick(cls, value: str) -> str:
        if not NICK.match(value):
            raise ValueError(
                "must be an IRC nick: a letter or one of []\\`_^{|} first, then letters, "
                "digits or those, at most 30 characters, e.g. 'wakeful'"
            )
        return value

    @field_validator("channels")
    @classmethod
    def _channels(cls, value: list[str]) -> list[str]:
        bad = [channel for channel in value if not CHANNEL.match(channel)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a channel name: write it with its #, e.g. '#home'")
        return value

    @field_validator("allowed_users")
    @classmethod
    def _allowed(cls, value: list[str]) -> list[str]:
        for entry in value:
            if entry.startswith(ACCOUNT_PREFIX):
                if len(entry) == len(ACCOUNT_PREFIX) or " " in entry:
                    raise ValueError(f"{entry!r}: write a services account as 'account:alice'")
                continue
            if not MASK.match(entry):
                raise ValueError(
                    f"{entry!r} is neither 'account:<name>' nor a nick!user@host mask "
                    "such as 'alice!~alice@203.0.113.7'"
                )
            if entry.split("@", 1)[1].strip("*?.") == "":
                raise ValueError(
                    f"{entry!r} matches any host: anyone could take that nick; name the host "
                    "(or use 'account:<name>' where the server has services)"
                )
        return value

    @model_validator(mode="after")
    def _sasl_pair(self) -> IrcConfig:
        if self.sasl_username is not None and self.sasl_password_file is None:
            raise ValueError(
                f"chat.irc '{self.name}': sasl_username needs sasl_password_file (a file "
                "holding the services password)"
            )
        return self

    @property
    def key(self) -> str:
        return f"chat.irc '{self.name}'"

    # Each password is redacted from every log line once read (read_secret).

    def sasl_password(self) -> str | None:
        if self.sasl_password_file is None:
            return None
        return read_secret(self.sasl_password_file, f"{self.key}.sasl_password_file")

    def server_password(self) -> str | None:
        if self.server_password_file is None:
            return None
        return read_secret(self.server_password_file, f"{self.key}.server_password_file")
