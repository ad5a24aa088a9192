"""The core built directly: store, loop deps, tools, dispatcher — no HTTP, no
lifespan, no components. Reproduces only what wakeful/app/lifespan.py wires for
the core itself: a real SQLite store on the test's tmp_path, its outbox, a tool
registry with the test tools, and the dispatcher (which owns Sessions, whose
supervisors run the SessionLoops) in a task group of the test's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from tests.support.changes import Changes, Check
from tests.support.channel import RecordingChannel
from tests.support.provider import ScriptedProvider
from tests.support.store import STORE_FILE, ObservedStore
from tests.support.tools import TestTools
from wakeful.core.dispatcher import Dispatcher
from wakeful.core.feed import Feed, FeedItem
from wakeful.core.front_door import SubmitResult
from wakeful.core.loop.deps import LoopDeps
from wakeful.core.loop.late_results import late_result_event, unpaid_promises
from wakeful.core.loop.limits import LoopLimits
from wakeful.core.loop.session_loop import SessionLoop
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.factory import open_outbox
from wakeful.core.outbox.service import Outbox
from wakeful.core.plan import SessionPlans
from wakeful.core.router import Router
from wakeful.core.system_prompt import SystemPrompts
from wakeful.kernel.events import Event, user_message
from wakeful.store.base import EventStatus, Store
from wakeful.store.config import StoreSection
from wakeful.store.factory import open_store

SYSTEM_PROMPT = "You are the core tier's test agent."

# Backoffs in milliseconds: a failing model or a crashed loop is retried at once.
FAST_LIMITS = LoopLimits(
    failure_backoff_s=0.001,
    restart_backoff_s=0.001,
    max_restart_backoff_s=0.01,
    parallel_budget_s=5.0,
)

# An event is done with once it left the queue, into the trajectory or quarantine.
SETTLED = frozenset({EventStatus.CONSUMED, EventStatus.QUARANTINED})

# A chat platform's channel beside the local chat, as a Matrix room or a Telegram chat is.
ROOM_CHANNEL = "chat:room"

Message = dict[str, Any]


async def open_test_store(
    data_dir: Path, *, synchronous: Literal["full", "normal"] = "normal"
) -> Store:
    """The daemon's default store (SQLite) through its own factory, in ``data_dir`` (which
    exists). ``normal``: committed without an fsync each time — a process crash loses
    nothing; ``full`` for a test that counts what the daemon's own setting costs."""
    return await open_store(StoreSection(sqlite_synchronous=synchronous), data_dir)


@asynccontextmanager
async def opened_store(
    data_dir: Path, *, synchronous: Literal["full", "normal"] = "normal"
) -> AsyncIterator[Store]:
    """:func:`open_test_store`, closed on the way out (also when the test failed)."""
    store = await open_test_store(data_dir, synchronous=synchronous)
    try:
        yield store
    finally:
        with anyio.CancelScope(shield=True):
            await store.aclose()


async def make_outbox(store: Store, *channels: RecordingChannel) -> Outbox:
    messages = await open_outbox(store)
    return Outbox(messages, Deliverer(messages, channels), presence=store)


def loop_deps(
    store: Store,
    provider: ScriptedProvider,
    tools: TestTools,
    feed: Feed,
    outbox: Outbox,
    data_dir: Path,
    limits: LoopLimits = FAST_LIMITS,
    plans: SessionPlans | None = None,
) -> LoopDeps:
    """What every session loop shares, with nothing a test does not need: no taint,
    no approvals, no tool surface (the registry's definitions are the tools array)."""
    workspace, output_dir = data_dir / "workspace", data_dir / "outputs"
    workspace.mkdir(parents=True, exist_ok=True)
    output_dir.mkdir(parents=True, exist_ok=True)
    return LoopDeps(
        store=store,
        provider=provider,
        tools=tools.registry,
        feed=feed,
        limits=limits,
        prompts=SystemPrompts(SYSTEM_PROMPT, [], lambda allowed: ""),
        workspace=workspace,
        output_dir=output_dir,
        outbox=outbox,
        plans=plans,
    )


@dataclass
class Core:
    store: Store
    provider: ScriptedProvider
    tools: TestTools
    feed: Feed
    channel: RecordingChannel
    room: RecordingChannel  # a chat platform's channel (ROOM_CHANNEL), beside the local chat
    deps: LoopDeps
    dispatcher: Dispatcher
    changes: Changes
    group: TaskGroup
    items: list[FeedItem] = field(default_factory=list)  # every feed item, in order

    async def send(
        self,
        text: str,
        *,
        kind: str = "user.input",
        session: str = "main",
        event_id: str | None = None,
    ) -> str:
        """The owner's message through the dispatcher; its event id."""
        event = user_message(text, kind=kind, session=session, event_id=event_id)
        result = await self.submit(event)
        assert not result.duplicate, f"{event.id} was a duplicate"
        return event.id

    async def submit(self, event: Event) -> SubmitResult:
        return await self.dispatcher.submit(event)

    def loop(self, session: str = "main") -> SessionLoop:
        return self.dispatcher.sessions.get(session)

    async def trajectory(self, session: str = "main") -> list[Message]:
        return await self.store.trajectory(session)

    async def until(self, check: Check, what: str) -> None:
        await self.changes.until(check, what)

    async def settled(self, session: str = "main") -> None:
        """Until the session owes nothing: its loop at rest (asleep after a pass, no
        wake-up or tool task pending: a resumed loop's first pass may owe a reply that no
        event asks for), every event of it out of the queue, and every late result a
        placeholder promised arrived (a tool ending after its placeholder reports back
        through the dispatcher: an event the loop still has to take)."""
        loop = self.loop(session)

        async def check() -> bool:
            if not loop.at_rest:
                return False
            events = await self.store.event_log(session, limit=10_000)
            if any(stored.status not in SETTLED for stored in events):
                return False
            ids = {stored.event.id for stored in events}
            promised = unpaid_promises(await self.trajectory(session))
            return all(late_result_event(session, c, t, "").id in ids for c, t in promised)

        await self.until(check, f"session {session} to settle")

    def routed(self, event_id: str) -> FeedItem:
        """The router's decision for the event, as the dispatcher published it."""
        return next(i for i in self.items if i["type"] == "event" and i["event_id"] == event_id)

    def alerts(self) -> list[str]:
        return [str(i["text"]) for i in self.items if i["type"] == "alert"]


@asynccontextmanager
async def build_core(
    data_dir: Path,
    *,
    limits: LoopLimits = FAST_LIMITS,
    default_reply: str | None = None,
    resume: bool = True,
) -> AsyncIterator[Core]:
    """The core over a store in ``data_dir``, its sessions resumed as at a daemon's
    start (events held mid-routing requeued, every known session's loop started;
    ``resume=False``: none started, for a test that runs a SessionLoop itself).
    Leaving it cancels the loops as a daemon stopping does (placeholders for tools)."""
    changes = Changes()
    store = await ObservedStore(data_dir, changes).open()
    try:
        feed = Feed()
        provider = ScriptedProvider(changes, default=default_reply)
        plans = SessionPlans(store)
        tools = TestTools(changes, plans)
        channel = RecordingChannel(changes)
        room = RecordingChannel(changes, ROOM_CHANNEL)
        outbox = await make_outbox(store, channel, room)
        deps = loop_deps(store, provider, tools, feed, outbox, data_dir, limits, plans)
        items: list[FeedItem] = []

        def observe(item: FeedItem) -> None:
            items.append(item)
            changes.ping()

        with feed.observe(observe):
            async with anyio.create_task_group() as group:
                await group.start(outbox.deliverer.run)
                dispatcher = Dispatcher(store, Router(), feed, group, deps)
                if resume:
                    await store.recover()
                    for session in await store.sessions():
                        dispatcher.sessions.get(session)
                yield Core(
                    store,
                    provider,
                    tools,
                    feed,
                    channel,
                    room,
                    deps,
                    dispatcher,
                    changes,
                    group,
                    items,
                )
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await store.aclose()


def _copy_committed(source: Path, target: Path) -> None:
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


async def crash_snapshot(data_dir: Path, into: Path) -> None:
    """What a kill -9 of the core in ``data_dir`` would leave on disk right now: every
    committed transaction, nothing in flight (SQLite's backup reads a consistent
    snapshot beside the open store). ``into`` is then opened by the next core."""
    await anyio.Path(into).mkdir(parents=True, exist_ok=True)
    await anyio.to_thread.run_sync(_copy_committed, data_dir / STORE_FILE, into / STORE_FILE)
