"""What a tool is: a JSON-schema definition for the model and one async call.

Every tool has the same signature, ``run(args, ctx) -> ToolOutput``. Errors
the model can act on are returned as ``ToolOutput(is_error=True)`` with what
went wrong and what to try; only bugs raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from wakeful.core.effects import Effect
from wakeful.core.taint import Taint


@dataclass(frozen=True)
class ToolOutput:
    text: str
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    # Set when the text carries a third party's words (a page fetched, an e-mail
    # read, a file the agent did not write): the registry then taints the session.
    # Says what it was, e.g. "fetch_url https://example.com/".
    untrusted_source: str | None = None


class TaskView(Protocol):
    """Read/cancel access to the session's background tasks (task_status, cancel_task)."""

    def describe(self, task_id: str) -> dict[str, Any] | None: ...

    def list_tasks(self) -> list[dict[str, Any]]: ...

    async def cancel(self, task_id: str) -> dict[str, Any] | None: ...


class UserOutbox(Protocol):
    """The session's way to the user: the durable outgoing-message port."""

    async def send(self, text: str, *, key: str) -> str:
        """Queue ``text`` for the user (``key``: the same key is one message, however
        often it is sent); returns what truly happened, e.g. "delivered to chat:web"."""
        ...

    async def notify(self, text: str, *, urgency: str, key: str) -> str:
        """A notification, not a reply: the channel is picked by ``urgency``
        (low/normal/high/urgent), where the user last wrote and their preferences."""
        ...


@dataclass(frozen=True)
class ToolContext:
    session: str
    call_id: str
    workspace: Path  # shell commands run here; relative paths resolve here
    output_dir: Path  # full outputs too long for the model are saved here
    tasks: TaskView
    outbox: UserOutbox  # messages to the user go out through here
    # The session's taint when the call started (None: untainted). What the call
    # creates to act later (timers, shell tasks) carries it on.
    taint: Taint | None = None
    # The event the session's run is answering (its newest taken), if any: provenance
    # for what the call keeps (a memory entry names the event that led to it).
    event_id: str | None = None


class ToolArgs(BaseModel):
    """Base of every tool's ``Args``: the model's arguments are taken as sent (no
    coercion of "5" into 5), and an unknown field is an error that names it."""

    # defer_build: a tool's schema and validator are built the first time it is called or
    # shown to the model, not when its module is imported: most tools are deferred (the
    # model sees their names only), and building all ~45 cost start-up ~15 ms.
    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)


class Tool(Protocol):
    """A tool; its arguments are its pydantic ``Args`` model, whose JSON schema is
    what the model sees. The registry validates each call once and hands ``run``
    the ``Args`` instance."""

    name: str
    description: str
    read_only: bool  # allowed in parallel side sessions
    effect: Effect  # what a call can do to the world: the policy chain decides from it
    timeout_s: float | None  # per-call wall-clock limit; None: the registry default

    @property
    def Args(self) -> type[BaseModel]: ...

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput: ...
