"""What every kind of source implements: check a request, then watch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from wakeful.core.effects import Effect, Reach
from wakeful.kernel.events import Event
from wakeful.sources.subscriptions.records import Kind, Subscription
from wakeful.sources.subscriptions.request import ConnectRequest

# Commits the event (deduplicated by id) and counts it on the subscription.
Fire = Callable[[Event], Awaitable[None]]


class Report(Protocol):
    """A line about the source as now seen (list_channels, the status); ``keep``: spec
    entries to store with it (an http_check's last status), so a restart resumes there."""

    async def __call__(self, detail: str, *, keep: dict[str, Any] | None = None) -> None: ...


class Refusal(ValueError):
    """The request cannot be subscribed; the message names the field and the fix."""


class Ended(Exception):
    """The source is gone for good (the shell task exited); the message says why."""


@dataclass(frozen=True)
class Asking:
    """Who asks for a subscription: the id it will have, the session and its workspace."""

    sub_id: str
    session: str
    workspace: Path


@dataclass(frozen=True)
class Planned:
    """A checked request: what the record keeps, and what the agent is told once."""

    spec: dict[str, Any]
    told: str = ""  # extra text for the tool result (a webhook's URL and token)
    told_data: dict[str, Any] = field(default_factory=dict)


class SourceKind(Protocol):
    kind: Kind
    effect: Effect  # what subscribing to this kind can do (the policy chain reads it)

    def reach(self, request: ConnectRequest) -> Reach: ...

    async def plan(self, request: ConnectRequest, asking: Asking) -> Planned:
        """The spec to keep, or :class:`Refusal`."""
        ...

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        """Watch until cancelled; raise :class:`Ended` when the source is gone, any other
        exception to be restarted after a backoff."""
        ...

    def disarmed(self, sub: Subscription) -> None:
        """The subscription was disconnected or ended: drop what ``plan`` attached."""
        ...
