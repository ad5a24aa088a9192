"""The ``[safety]`` section: where tools may work and what needs the owner's yes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from wakeful.kernel.config_base import Section
from wakeful.kernel.field_defaults import empty_list

_EMAIL_PATTERN = re.compile(r"^(\*|[^@\s*]+)@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
_HOST_PATTERN = re.compile(r"^(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


class SafetySection(Section):
    workspace: Path | None = Field(
        default=None,
        examples=["/var/lib/wakeful/workspace"],
        description=(
            "The only directory file tools read and write and shell commands run in; "
            "default <data_dir>/workspace. Paths are resolved (symlinks, ..) before the check."
        ),
    )
    sandbox: Literal["auto", "bubblewrap", "none"] = Field(
        default="auto",
        examples=["auto"],
        description=(
            'Shell commands run inside bubblewrap when "auto" finds bwrap (Debian package '
            'bubblewrap; without it "auto" switches the shell tools off) or "bubblewrap" '
            'demands it (start-up fails without it); "none" runs them unconfined, with '
            "resource limits only."
        ),
    )
    sandbox_network: bool = Field(
        default=False,
        examples=[False],
        description=(
            "true: sandboxed shell commands may use the network (pip install, git clone); "
            "false: they get only a loopback interface of their own."
        ),
    )
    limit_cpu_s: int = Field(
        default=600,
        ge=1,
        examples=[600],
        description="CPU seconds one shell command (with its children, each) may use.",
    )
    limit_memory_mb: int = Field(
        default=2048,
        ge=64,
        examples=[2048],
        description=(
            "Address space (virtual memory) of each process a shell command starts, in MiB; "
            "programs that reserve much more than they use (JVM, Go, Node) may need more."
        ),
    )
    limit_processes: int = Field(
        default=256,
        ge=8,
        examples=[256],
        description=(
            "Processes a shell command may have at once (stops fork bombs); under root the "
            "sandbox runs commands as nobody (65534), and this counts all of nobody's."
        ),
    )
    limit_file_mb: int = Field(
        default=1024,
        ge=1,
        examples=[1024],
        description="The largest file a shell command may write, in MiB.",
    )
    approval_timeout_s: float = Field(
        default=900.0,
        gt=0,
        examples=[900],
        description="A pending approval not decided in this long is denied (the safe default).",
    )
    breaker_denials: int = Field(
        default=3,
        ge=1,
        examples=[3],
        description=(
            "After this many denied calls in a session its consequential calls are refused "
            "until the owner resets the breaker (wakeful breaker reset SESSION)."
        ),
    )
    email_allow: list[str] = Field(
        default_factory=empty_list,
        examples=[["me@example.com", "*@example.com"]],
        description=(
            "Recipients send_email may write to without approval even from a tainted "
            'session: addresses, or "*@domain" for a whole domain.'
        ),
    )
    http_allow: list[str] = Field(
        default_factory=empty_list,
        examples=[["api.github.com", "*.example.com"]],
        description=(
            "Hosts fetch_url may reach without approval from a tainted session; also the "
            "only way to reach a private or loopback address."
        ),
    )
    shell_allow: list[str] = Field(
        default_factory=empty_list,
        examples=[["git status", "pytest"]],
        description=(
            "Command prefixes that need no approval even in a tainted session (a command "
            "with ; | & $ ` < > or a newline never matches)."
        ),
    )
    reviewer_model: str = Field(
        default="",
        examples=["gpt-4o-mini"],
        description=(
            "A model that reviews risky calls from their structured fields only; empty: the "
            "rules alone decide."
        ),
    )
    reviewer_budget_ms: int = Field(
        default=3000,
        ge=100,
        examples=[3000],
        description="How long the model reviewer may take; past it the call needs approval.",
    )

    @field_validator("email_allow")
    @classmethod
    def _emails(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _EMAIL_PATTERN.match(value):
                raise ValueError(
                    f'{value!r} is not an address: write "me@example.com" or "*@example.com"'
                )
        return [value.lower() for value in values]

    @field_validator("http_allow")
    @classmethod
    def _hosts(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _HOST_PATTERN.match(value):
                raise ValueError(
                    f'{value!r} is not a host: write "api.github.com", "*.example.com" or '
                    '"127.0.0.1:8080" (no scheme, no path)'
                )
        return [value.lower() for value in values]

    @field_validator("shell_allow")
    @classmethod
    def _prefixes(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.strip():
                raise ValueError("an empty prefix would allow every command; remove it")
        return values

    def workspace_path(self, data_dir: Path) -> Path:
        return self.workspace.expanduser() if self.workspace else data_dir / "workspace"
