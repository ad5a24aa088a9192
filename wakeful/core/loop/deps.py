"""What a session loop is built from: its dependencies and the ports it calls.

Kept apart from the loop so the daemon's wiring (lifespan, dispatcher, sessions)
depends on these names, not on the loop's code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from wakeful.core.approvals import Approval
from wakeful.core.context.config import DEFAULT_WINDOW, ContextSection
from wakeful.core.feed import FeedItem
from wakeful.core.loop.limits import LoopLimits
from wakeful.core.loop.model_health import ModelHealth
from wakeful.core.loop.session_scope import SessionScopes
from wakeful.core.loop.task_views import SessionTaskViews
from wakeful.core.loop.tool_tasks import ToolExecutor
from wakeful.core.outbox.service import SessionOutbox
from wakeful.core.plan import SessionPlans
from wakeful.core.provider import ModelProvider
from wakeful.core.session_taint import SessionTaints
from wakeful.core.spend import SpendGuard
from wakeful.core.system_prompt import SystemPrompts
from wakeful.kernel.events import Event
from wakeful.store.base import Store, StoredEvent
from wakeful.store.outbox.record import OutgoingMessage


class BatchGate(Protocol):
    """The supervisor's view of a run: what it takes, consumes and gets answered."""

    held_back: list[StoredEvent]  # the part of the last admitted batch left in the queue

    async def admit(self, batch: list[StoredEvent]) -> list[StoredEvent]:
        """What of the batch runs now; the rest of what it does not hold back is quarantined."""
        ...

    def consumed(self) -> None: ...

    def answered(self) -> None: ...


class ToolCatalog(ToolExecutor, Protocol):
    def definitions(self, read_only: bool = False) -> list[dict[str, Any]]: ...


class SessionTools(Protocol):
    """The tools array a session's request carries (wakeful/tools/tool_surface.py)."""

    async def tools_for(self, session: str) -> list[dict[str, Any]]: ...

    async def load(self, session: str, names: Sequence[str]) -> list[str]: ...


class AgentOutbox(Protocol):
    """Where everything the agent says leaves (``wakeful.core.outbox.service.Outbox``)."""

    async def note_event(self, event: Event) -> None:
        """Where the owner last wrote from: a reply's fallback target."""
        ...

    async def send(
        self, session: str, text: str, *, key: str, answering: Event | None = None
    ) -> OutgoingMessage: ...

    async def send_and_report(
        self, session: str, text: str, *, key: str, answering: Event | None = None
    ) -> str: ...

    async def notify_and_report(
        self, session: str, text: str, *, urgency: str, key: str, approval: str | None = None
    ) -> str: ...

    async def latest(self, session: str) -> OutgoingMessage | None: ...

    def for_session(self, session: str, answering: Callable[[], Event | None]) -> SessionOutbox: ...


class PendingApprovals(Protocol):
    """The approvals the status bar shows (``wakeful.core.approvals.Approvals``)."""

    async def pending(self, session: str | None = None) -> list[Approval]: ...


class FeedPublisher(Protocol):
    """The live feed a loop reports to (``wakeful.core.feed.Feed``)."""

    def publish(self, session: str, item: FeedItem) -> int: ...


@dataclass(frozen=True)
class LoopDeps:
    """Every field is the narrowest interface the loop calls, not the daemon's object."""

    store: Store
    provider: ModelProvider
    tools: ToolCatalog
    feed: FeedPublisher
    limits: LoopLimits
    prompts: SystemPrompts  # each session's system prompt
    workspace: Path
    output_dir: Path
    outbox: AgentOutbox  # everything the agent says leaves through here
    # Components' task views (background shell tasks, …), added at start-up.
    task_views: list[SessionTaskViews] = field(default_factory=list)
    model_health: ModelHealth = field(default_factory=ModelHealth)  # read by the status
    # Where the session's taint is kept (None in tests that build a bare loop).
    taints: SessionTaints | None = None
    approvals: PendingApprovals | None = None  # the pending ones are shown in the status bar
    # The context budget: [context] and the model's window in tokens.
    context: ContextSection = field(default_factory=ContextSection)
    context_window: int = DEFAULT_WINDOW
    # Resident schemas plus what the session loaded; None: every tool's definition.
    surface: SessionTools | None = None
    # What components narrow per session (a subagent's tools and budget).
    scopes: SessionScopes = field(default_factory=SessionScopes)
    # Each session's plan, shown in its status bar (None in tests that build a bare loop).
    plans: SessionPlans | None = None
    # The tools offered in the silent turn before a compaction (memory's remember).
    compaction_tools: Sequence[str] = ()
    # Sessions that run on another model than [llm] model (the heartbeat's: fast_model).
    session_models: Mapping[str, str] = field(default_factory=dict)
    # Guards every model call the loop makes (a budget component's); None: unguarded.
    spend: SpendGuard | None = None
    # [llm] provider and model, named on the model calls' spans (wakeful/kernel/tracing.py).
    provider_name: str = ""
    model_name: str = ""


@dataclass
class Interrupt:
    cause: str
    stop_tools: bool
    shutdown: bool = False  # the daemon is stopping: no late result will follow


Submit = Callable[[Event], Awaitable[object]]
