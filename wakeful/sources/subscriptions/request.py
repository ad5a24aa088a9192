"""connect_channel's arguments: one flat set, each kind using the fields it names.

Flat rather than one schema per kind: models fill a flat object reliably, and
each kind's ``plan`` says exactly which field is missing or not its own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from wakeful.core.tool import ToolArgs
from wakeful.kernel.field_defaults import empty_list
from wakeful.sources.subscriptions.records import Kind


class PayloadCondition(ToolArgs):
    """One webhook payload condition: the value at ``field`` equals ``equals`` or
    matches the regular expression ``pattern``."""

    field: str = Field(min_length=1, description="dotted path into the JSON, e.g. 'build.status'")
    equals: str | int | float | bool | None = Field(default=None)
    pattern: str | None = Field(default=None, description="a Python regular expression")


class ConnectRequest(ToolArgs):
    kind: Kind = Field(description="mailbox, webhook, file, shell_output or http_check")
    note: str = Field(default="", max_length=200, description="what it is for, shown in events")
    # mailbox
    account: str | None = Field(default=None, description="mailbox: the mail account's name")
    folder: str = Field(default="INBOX", description="mailbox: the IMAP folder")
    sender: str | None = Field(default=None, description="mailbox: sender address glob or regex")
    subject: str | None = Field(default=None, description="mailbox: subject glob or regex")
    # mailbox and shell_output
    regex: bool = Field(
        default=False, description="sender/subject/pattern are regular expressions, not globs"
    )
    # webhook
    hook: str | None = Field(
        default=None,
        description="webhook: a configured [[hooks]] name to filter instead of a new route",
    )
    conditions: list[PayloadCondition] = Field(
        default_factory=empty_list, description="webhook: payload conditions, all must hold"
    )
    # file
    path: str | None = Field(default=None, description="file: a file or directory to watch")
    glob: str | None = Field(default=None, description="file: only names matching, e.g. '*.csv'")
    # shell_output
    task_id: str | None = Field(default=None, description="shell_output: a running task's id")
    pattern: str | None = Field(default=None, description="shell_output: text an output line has")
    # http_check
    url: str | None = Field(default=None, description="http_check: an http(s) URL to GET")
    interval_s: int | None = Field(default=None, description="http_check: seconds between checks")
    on: Literal["status", "content", "any"] = Field(
        default="any", description="http_check: fire on a status change, a content change or any"
    )


# The fields each kind reads besides kind and note; anything else given is a mistake.
FIELDS: dict[str, frozenset[str]] = {
    "mailbox": frozenset({"account", "folder", "sender", "subject", "regex"}),
    "webhook": frozenset({"hook", "conditions"}),
    "file": frozenset({"path", "glob"}),
    "shell_output": frozenset({"task_id", "pattern", "regex"}),
    "http_check": frozenset({"url", "interval_s", "on"}),
}


def foreign_fields(request: ConnectRequest) -> list[str]:
    """Fields given that the request's kind does not use."""
    given = request.model_fields_set - {"kind", "note"}
    return sorted(given - FIELDS[request.kind])
