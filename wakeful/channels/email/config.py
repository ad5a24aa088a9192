"""``[email]``: mail accounts (IMAP in, SMTP out) and the calendar file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from wakeful.kernel.config_base import ConfigError, Section, read_secret
from wakeful.kernel.field_defaults import empty_list
from wakeful.kernel.session_names import SESSION_PATTERN

Security = Literal["tls", "starttls", "none"]


class EmailAccountConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, examples=["work"])
    imap_host: str = Field(examples=["imap.example.com"])
    imap_port: int = Field(default=993, ge=1, le=65535, examples=[993])
    imap_security: Security = Field(default="tls", examples=["tls"])
    smtp_host: str = Field(default="", examples=["smtp.example.com"])
    smtp_port: int = Field(default=587, ge=1, le=65535, examples=[587])
    smtp_security: Security = Field(default="starttls", examples=["starttls"])
    username: str = Field(examples=["me@example.com"])
    password: SecretStr | None = None
    password_file: Path | None = Field(default=None, examples=["/etc/wakeful/mail-password"])
    address: str = Field(default="", examples=["me@example.com"])
    mailboxes: list[str] = Field(default_factory=lambda: ["INBOX"], examples=[["INBOX"]])
    archive_mailbox: str = Field(default="Archive", examples=["Archive"])
    session: str = Field(default="main", examples=["main"])
    owner_senders: list[str] = Field(
        default_factory=empty_list,
        description="Addresses whose mail is trusted as the owner's, and only when the "
        "receiving server authenticated it (see authserv_id); all other mail is untrusted.",
        examples=[["me@example.com"]],
    )
    authserv_id: str = Field(
        default="",
        description="The receiving mail server's name as it writes it first in the "
        "Authentication-Results headers it adds (find it in a received mail's headers). "
        "Mail from owner_senders is trusted only with a DMARC or aligned DKIM pass in that "
        "server's header; empty: no mail is trusted as the owner's.",
        examples=["mx.example.com"],
    )
    authserv_received_above: int = Field(
        default=0,
        ge=0,
        le=20,
        description="How many Received lines sit above your receiving server's "
        "Authentication-Results header in a mail you received (0: it is above them all, "
        "as with Postfix and a DKIM/DMARC milter; usually 2 with Gmail). A header with more above "
        "it was in the mail already, written by the sender, and does not count.",
        examples=[0],
    )
    # Everything below has a default; see wakeful/channels/email/ for how each is used.
    sent_mailbox: str = Field(default="Sent", examples=["Sent"])
    initial_sync: Literal["new", "all"] = Field(default="new", examples=["new"])
    idle_reissue_s: float = Field(default=29 * 60, gt=0, le=29 * 60, examples=[1740])
    poll_interval_s: float = Field(default=60.0, gt=0, examples=[60])
    timeout_s: float = Field(default=30.0, gt=0, examples=[30])
    reconnect_min_s: float = Field(default=1.0, gt=0, examples=[1])
    reconnect_max_s: float = Field(default=300.0, gt=0, examples=[300])
    alert_after_s: float = Field(default=300.0, gt=0, examples=[300])
    body_max_chars: int = Field(default=20_000, ge=200, examples=[20000])
    only_senders: list[str] = Field(default_factory=empty_list, examples=[["*@example.com"]])
    ignore_senders: list[str] = Field(default_factory=empty_list, examples=[["*@ads.example.com"]])
    ignore_subjects: list[str] = Field(default_factory=empty_list, examples=[["(?i)newsletter"]])

    @field_validator("ignore_subjects")
    @classmethod
    def _regexes(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
        return value

    @field_validator("session")
    @classmethod
    def _session_name(cls, value: str) -> str:
        if not SESSION_PATTERN.match(value):
            raise ValueError("must be a session name such as 'main'")
        return value

    @field_validator("mailboxes")
    @classmethod
    def _some_mailbox(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("list at least one mailbox to watch")
        return value

    def owner_trust(self) -> str:
        """For status: whether and how this account's owner mail can be trusted."""
        if not self.owner_senders:
            return "off: owner_senders is empty (all mail is a stranger's)"
        if not self.authserv_id.strip():
            return (
                "off: authserv_id is empty, so all mail is a stranger's, owner_senders "
                "included (set it: docs/email.md)"
            )
        return (
            f"on: owner_senders when {self.authserv_id.strip()} vouches, its header "
            f"under at most {self.authserv_received_above} Received line(s)"
        )

    def owner_trust_warning(self) -> str | None:
        """One line when owner_senders can never match: no server is named to vouch."""
        if not self.owner_senders or self.authserv_id.strip():
            return None
        return (
            f"email.accounts[{self.name}]: owner_senders is set but authserv_id is empty, so "
            "no mail is trusted as the owner's; set authserv_id to the name your receiving "
            "server writes first in Authentication-Results (e.g. 'mx.example.com'; see "
            "docs/email.md)"
        )

    def resolve_password(self) -> str:
        """password, else password_file's first line."""
        if self.password is not None and self.password.get_secret_value():
            return self.password.get_secret_value()
        if self.password_file is not None:
            key = f"email.accounts[{self.name}].password_file"
            return read_secret(self.password_file, key)
        raise ConfigError(
            f"email.accounts[{self.name}]: set password_file (or password) for {self.username}"
        )


class EmailSection(Section):
    accounts: list[EmailAccountConfig] = Field(default_factory=empty_list)
    calendar_path: Path | None = Field(default=None, examples=["~/calendar.ics"])


class EmailSettings(BaseModel):
    email: EmailSection = Field(default_factory=EmailSection)
