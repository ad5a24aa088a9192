"""One ``MailboxWatcher`` run against a real IMAP server, and what it submitted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.health import MailboxHealth
from wakeful.channels.email.mail_state import MailState
from wakeful.channels.email.watcher import MailboxWatcher
from wakeful.core.front_door import SubmitResult
from wakeful.kernel.events import Event
from wakeful.store.sqlite import SqliteStore

PROMPT_S = 10.0


class Inbox:
    """What the watcher submitted, and a condition to await on it."""

    def __init__(self) -> None:
        self.subjects: list[str] = []
        self.states: list[str] = []
        self.last_health: MailboxHealth | None = None
        self._changed = anyio.Event()

    async def submit(self, event: Event) -> SubmitResult:
        self.subjects.append(str(event.content.subject))
        self._changed.set()
        return SubmitResult(event.id, duplicate=False)

    def health(self, health: MailboxHealth) -> None:
        self.states.append(health.state)
        self.last_health = health
        self._changed.set()

    async def until(self, condition: Callable[[], bool], timeout_s: float = PROMPT_S) -> None:
        with anyio.fail_after(timeout_s):
            while not condition():
                await self._changed.wait()
                self._changed = anyio.Event()


async def watch_mailbox(
    account: EmailAccountConfig,
    password: str,
    tmp_path: Path,
    inbox: Inbox,
    work: Callable[[], Any],
) -> None:
    """Runs the watcher on INBOX (its state in a store under ``tmp_path``) until it is
    idle, then ``work``, then stops it."""
    store = await SqliteStore(tmp_path / "wakeful.db").open()
    watcher = MailboxWatcher(
        account, password, "INBOX", MailState(store.state()), inbox.submit, inbox.health
    )
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(watcher.run)
            await inbox.until(lambda: "idle" in inbox.states)
            await work()
            group.cancel_scope.cancel()
    finally:
        await store.aclose()
