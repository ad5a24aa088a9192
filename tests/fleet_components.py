"""One component run on its own, as one daemon of a fleet would run it, on the real Redis.

Several of these on one key prefix stand for several daemons: each has its
own event store connection and its own data directory, and every event it
submits goes into the shared store (deduplicated by id there) and is also
counted, so a test can tell "submitted once" from "submitted twice, deduplicated".
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus

from tests.daemon_harness import daemon_settings
from tests.redis_server import REDIS_URL
from wakeful.app.config import Settings
from wakeful.core.approvals import Approvals
from wakeful.core.components.context import Component, ComponentSetup, Registrations
from wakeful.core.feed import Feed
from wakeful.core.front_door import SubmitResult
from wakeful.core.outbox.deliverer import Delivery
from wakeful.core.tool_registry import ToolRegistry
from wakeful.kernel.events import Event
from wakeful.store.base import Cursor, Store
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

UNUSED_MODEL_URL = "http://127.0.0.1:9/v1"  # these components never call the model


def fleet_settings(data_dir: Path, prefix: str, **sections: dict[str, Any]) -> Settings:
    store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix}
    overrides: dict[str, Any] = {"store": store, **sections}
    data_dir.mkdir(parents=True, exist_ok=True)
    return daemon_settings(data_dir, UNUSED_MODEL_URL, **overrides)


@dataclass
class FleetMember:
    """One stand-in daemon: its settings, store, registrations and every event it submitted."""

    name: str
    settings: Settings
    store: Store
    registrations: Registrations
    submitted: list[Event] = field(default_factory=list)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    _arrived: anyio.Event = field(default_factory=anyio.Event)
    _running: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def stop(self) -> None:
        """Stop the component as the daemon stopping would (its tasks cancelled)."""
        self._running.cancel()

    async def submit(self, event: Event, *, cursor: Cursor | None = None) -> SubmitResult:
        self.submitted.append(event)
        self._arrived.set()
        self._arrived = anyio.Event()
        result = await self.store.append(event, cursor=cursor)
        return SubmitResult(event.id, duplicate=not result.created)

    async def next_submit(self) -> None:
        await self._arrived.wait()


async def _no_messages(message: NewMessage) -> OutgoingMessage:
    raise AssertionError(f"unexpected outgoing message {message}")


async def _no_deliveries(message: NewMessage) -> Delivery:
    raise AssertionError(f"unexpected message: {message.text}")


async def _no_notices(session: str, text: str, key: str) -> str:
    raise AssertionError(f"unexpected notice to the owner: {text}")


@asynccontextmanager
async def run_member(
    name: str, component: Component, settings: Settings
) -> AsyncIterator[FleetMember]:
    """Configure ``component`` and run it until the block ends (as a daemon stopping does)."""
    data_dir = settings.daemon.data_dir_path()
    store = await _open_store(settings, data_dir)
    try:
        async with AsyncExitStack() as resources:
            member = FleetMember(name, settings, store, Registrations(ToolRegistry()))
            setup = ComponentSetup(
                name=component.name,
                settings=settings,
                data_dir=data_dir,
                store=store,
                feed=Feed(),
                registrations=member.registrations,
                resources=resources,
                submit=member.submit,
                send_message=_no_messages,
                deliver_message=_no_deliveries,
                approvals=Approvals(store, timeout_s=60),
                sessions=_NoSessions(),
                notify_owner=_no_notices,
            )
            await component.configure(setup)

            async def run(*, task_status: TaskStatus[None]) -> None:
                with member._running:
                    await component.run(task_status=task_status)
                member.stopped.set()

            async with anyio.create_task_group() as group:
                await group.start(run)
                yield member
                member.stop()
    finally:
        await store.aclose()


async def _open_store(settings: Settings, data_dir: Path) -> Store:
    """The store ``[store]`` names, as the daemon opens it (on Redis, the timers its SQLite
    file held are moved in), but without the prefix lease: several stand-ins share it."""
    if settings.store.backend == "sqlite":
        return await SqliteStore(data_dir / "wakeful.db").open()
    return await RedisStore(
        REDIS_URL, prefix=settings.store.redis_prefix, sqlite_file=data_dir / "wakeful.db"
    ).open()


class _NoSessions:
    """A stand-in daemon's components start no sessions of their own."""

    async def close(self, session: str, cause: str) -> None:
        raise AssertionError(f"a fleet stand-in was asked to close session {session!r}")

    def wake_all(self) -> None:
        raise AssertionError("a fleet stand-in was asked to wake its sessions")

    def is_busy(self, session: str) -> bool:
        return False
