"""The one structured event every input becomes (SPEC §2).

An event is validated once, at the edge where it is made; everything after
that trusts its fields. A bad event is refused with :class:`EventError`,
whose message names the offending field so a webhook sender or a CLI user
knows what to fix.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.field_defaults import empty_dict
from wakeful.kernel.session_names import SESSION_PATTERN, SESSION_RULE
from wakeful.kernel.trust import event_kind_trustable

KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
MAX_ID_LENGTH = 512
MAX_TEXT_LENGTH = 1_000_000

Priority = Literal["low", "normal", "high", "urgent"]


class EventError(ValueError):
    """An event was refused; the message names the field and the fix."""


class Source(BaseModel):
    """Who produced the event."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str = Field(min_length=1, max_length=64)
    principal: str | None = Field(default=None, max_length=256)
    trusted: bool = False


class Content(BaseModel):
    """What the event says: readable text plus an optional structured payload."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(default="", max_length=MAX_TEXT_LENGTH)
    subject: str | None = Field(default=None, max_length=4096)
    data: dict[str, Any] = Field(default_factory=empty_dict)


class Context(BaseModel):
    """Background that helps place the event: priority, thread, related work."""

    model_config = ConfigDict(extra="allow", frozen=True)

    priority: Priority = "normal"
    reply_to: str | None = None
    related_call_id: str | None = None
    related_task_id: str | None = None
    tool_name: str | None = None


def utcnow() -> datetime:
    return datetime.now(UTC)


class Event(BaseModel):
    """One input from the world, as stored, routed and shown to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    kind: str
    source: Source
    channel: str = Field(min_length=1, max_length=256)
    content: Content = Field(default_factory=Content)
    context: Context = Field(default_factory=Context)
    session: str = "main"
    occurred_at: datetime = Field(default_factory=utcnow)
    received_at: datetime = Field(default_factory=utcnow)

    @field_validator("kind")
    @classmethod
    def _kind_is_dotted(cls, value: str) -> str:
        if not KIND_PATTERN.match(value):
            raise ValueError("must be a dotted lower-case type such as 'user.input'")
        return value

    @field_validator("session")
    @classmethod
    def _session_is_a_name(cls, value: str) -> str:
        if not SESSION_PATTERN.match(value):
            raise ValueError(f"must be {SESSION_RULE}")
        return value

    @field_validator("id")
    @classmethod
    def _id_is_printable(cls, value: str) -> str:
        if not value.isprintable() or value != value.strip():
            raise ValueError("must be printable with no surrounding whitespace")
        return value

    @field_validator("occurred_at", "received_at")
    @classmethod
    def _times_are_aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("must carry a time zone (e.g. '2026-01-01T10:00:00+00:00')")
        return value.astimezone(UTC)

    @property
    def trusted(self) -> bool:
        """The producer's claim, honoured only for kinds declared trustable
        (wakeful/kernel/trust.py): any other kind is a third party's words."""
        return self.source.trusted and event_kind_trustable(self.kind)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, raw: str | bytes) -> Event:
        try:
            return cls.model_validate_json(raw)
        except ValidationError as exc:
            raise EventError(describe_validation_error(exc)) from None

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Event:
        """Validate a dict into an event, or raise EventError naming the field."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise EventError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "event"
        parts.append(f"event field '{where}': {error['msg']}")
    return "; ".join(parts)


def new_event_id(prefix: str) -> str:
    """A fresh id for events that have no natural idempotency key."""
    return f"{prefix}:{uuid.uuid4().hex}"


def user_message(
    text: str,
    *,
    session: str = "main",
    channel: str = "chat:api",
    principal: str = "owner",
    event_id: str | None = None,
    kind: str = EventKind.USER_INPUT,
) -> Event:
    """The event for a message typed by the authenticated owner."""
    return Event.parse(
        {
            "id": event_id or new_event_id("msg"),
            "kind": kind,
            "source": {"type": "user", "principal": principal, "trusted": True},
            "channel": channel,
            "content": {"text": text},
            "session": session,
        }
    )
