"""``[[chat.xmpp]]``: one XMPP account the daemon listens and answers as."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig
from wakeful.kernel.config_base import ConfigError, read_secret
from wakeful.kernel.config_files import credential_path
from wakeful.kernel.field_defaults import empty_list
from wakeful.llm.model_key import is_loopback

# A bare JID: localpart@domain, no resource (RFC 7622, the common shape).
BARE_JID = re.compile(r"^[^@/\s\"&'<>:]+@[^@/\s]+$")


class XmppConfig(ChatPlatformConfig):
    """One account: its JID and password, the server, whom it answers."""

    jid: str = Field(
        examples=["wakeful@example.org"],
        description="The account's bare JID (user@domain), created on the server beforehand.",
    )
    password_file: Path = Field(
        examples=["/etc/wakeful/xmpp-password"],
        description="File holding the account's password (never logged).",
    )
    server: str = Field(
        default="",
        examples=["xmpp.example.org"],
        description=(
            "Host to connect to; empty: the JID's domain, found by DNS SRV records as clients do."
        ),
    )
    port: int = Field(
        default=5222,
        ge=1,
        le=65535,
        examples=[5222],
        description="Client-to-server port (STARTTLS); used when server is set.",
    )
    allowed_jids: list[str] = Field(
        default_factory=empty_list,
        examples=[["me@example.org"]],
        description=(
            "Bare JIDs of the owners; anyone else gets a pairing code "
            "(`wakeful pairing approve xmpp <code>`)."
        ),
    )
    ca_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/xmpp-ca.pem"],
        description=(
            "PEM file of the CA (or the self-signed certificate) to trust for the server's "
            "TLS certificate; unset: the system's CAs."
        ),
    )
    direct_tls: bool = Field(
        default=False,
        examples=[False],
        description=(
            "TLS from the first byte (XEP-0368, usually port 5223) instead of STARTTLS on "
            "the client port."
        ),
    )
    allow_plaintext: bool = Field(
        default=False,
        examples=[False],
        description=(
            "Log in without TLS when the server offers none. Only for a server on "
            "loopback (server = 127.0.0.1, ::1 or localhost); TLS is required otherwise."
        ),
    )
    resource: str = Field(
        default="",
        examples=["wakeful"],
        description="The XMPP resource the daemon logs in as (default wakeful-<name>).",
    )
    typing_every_s: float = Field(
        default=20.0,
        gt=0,
        examples=[20.0],
        description=(
            "How often 'composing' (XEP-0085) is repeated while a run works; clients show "
            "it until the reply or 'paused'."
        ),
    )
    retry_min_s: float = Field(
        default=1.0, gt=0, examples=[1.0], description="First backoff after a connection failure."
    )
    retry_max_s: float = Field(
        default=60.0,
        gt=0,
        examples=[60.0],
        description="Longest backoff between reconnection attempts.",
    )

    @field_validator("jid")
    @classmethod
    def _jid(cls, value: str) -> str:
        if not BARE_JID.match(value):
            raise ValueError(f"{value!r} is not a bare JID like 'wakeful@example.org'")
        return value.lower()

    @field_validator("allowed_jids")
    @classmethod
    def _allowed(cls, value: list[str]) -> list[str]:
        bad = [jid for jid in value if not BARE_JID.match(jid)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a bare JID like 'me@example.org' (no /resource)")
        return [jid.lower() for jid in value]

    @model_validator(mode="after")
    def _plaintext_on_loopback_only(self) -> XmppConfig:
        if self.allow_plaintext and not is_loopback(self.server):
            raise ValueError(
                "allow_plaintext = true is only for a server on loopback: set server = "
                '"127.0.0.1" (or ::1, localhost), or remove allow_plaintext and keep TLS'
            )
        return self

    @model_validator(mode="after")
    def _one_way_in(self) -> XmppConfig:
        if self.allow_plaintext and self.direct_tls:
            raise ValueError("allow_plaintext and direct_tls exclude each other: set one")
        return self

    @property
    def key(self) -> str:
        return f"chat.xmpp[{self.name}]"

    @property
    def domain(self) -> str:
        return self.jid.split("@", 1)[1]

    @property
    def full_jid(self) -> str:
        return f"{self.jid}/{self.resource or f'wakeful-{self.name}'}"

    def check_ca_file(self) -> None:
        if self.ca_file is not None and not os.access(credential_path(self.ca_file), os.R_OK):
            raise ConfigError(
                f"{self.key}.ca_file: cannot read {self.ca_file}; give a readable PEM file "
                "of the server's CA or self-signed certificate, or remove the key"
            )

    def password(self) -> str:
        """Read from password_file, and redacted from every log line from then on."""
        return read_secret(self.password_file, f"{self.key}.password_file")
