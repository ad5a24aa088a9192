"""Run the whole daemon in-process against the fake model server, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import httpx

from wakeful.app.config import Settings
from wakeful.app.lifespan import RunningDaemon, running_daemon
from wakeful.core.components.context import Component
from wakeful.core.feed import FeedItem

ADMIN_TOKEN = "test-admin-token-0123456789"


def daemon_settings(
    data_dir: Path,
    model_url: str,
    *,
    hooks: list[dict[str, Any]] | None = None,
    **overrides: dict[str, Any],
) -> Settings:
    sections: dict[str, Any] = {
        "daemon": {"data_dir": str(data_dir), "log_level": "warning"},
        "server": {"bind": "127.0.0.1:0", "admin_token": ADMIN_TOKEN},
        "llm": {"base_url": model_url, "model": "fake-model", "max_retries": 0},
        "loop": {"stop_grace_s": 0.5},
        # Scenarios run scripts from the test's temporary directory, which the sandbox
        # hides; tests/test_sandbox.py covers the sandbox itself.
        "safety": {"sandbox": "none"},
        # Resource alerts depend on the host (a nearly full disk on a CI runner would put
        # one into every test's main session); tests/test_system_events.py turns them on.
        "system": {"enabled": False},
    }
    for section, values in overrides.items():
        sections.setdefault(section, {}).update(values)
    if hooks is not None:
        sections["hooks"] = hooks
    return Settings(**sections)


class ModelEndpoint(Protocol):
    provider: str

    @property
    def base_url(self) -> str: ...


def settings_for(data_dir: Path, server: ModelEndpoint, **overrides: dict[str, Any]) -> Settings:
    """daemon_settings for a fake model server of either provider (OpenAI or Anthropic)."""
    llm = {"provider": server.provider, **overrides.pop("llm", {})}
    return daemon_settings(data_dir, server.base_url, llm=llm, **overrides)


@dataclass
class Harness:
    running: RunningDaemon
    client: httpx.AsyncClient

    @property
    def daemon(self) -> Any:
        return self.running.daemon

    async def send(
        self, text: str, *, session: str = "main", kind: str = "user.input", **extra: Any
    ) -> str:
        response = await self.client.post(
            "/api/messages", json={"session": session, "text": text, "kind": kind, **extra}
        )
        assert response.status_code == 202, response.text
        event_id: str = response.json()["event_id"]
        return event_id

    async def trajectory(self, session: str = "main") -> list[dict[str, Any]]:
        response = await self.client.get(f"/api/sessions/{session}/trajectory")
        assert response.status_code == 200, response.text
        messages: list[dict[str, Any]] = response.json()["messages"]
        return messages


@asynccontextmanager
async def harness(
    settings: Settings, components: Sequence[Component] | None = None
) -> AsyncIterator[Harness]:
    """The daemon and an admin client; ``components``: as running_daemon's."""
    async with running_daemon(settings, components) as running:
        headers = {"Authorization": f"Bearer {running.admin_token}"}
        async with httpx.AsyncClient(base_url=running.url, headers=headers) as client:
            yield Harness(running, client)


class FeedWatcher:
    """Collects a session's feed items and waits for one that matches."""

    def __init__(self) -> None:
        self.items: list[FeedItem] = []
        self._changed = anyio.Event()

    def add(self, item: FeedItem) -> None:
        self.items.append(item)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(
        self, predicate: Callable[[FeedItem], bool], timeout_s: float = 10.0
    ) -> FeedItem:
        with anyio.fail_after(timeout_s):
            seen = 0
            while True:
                for item in self.items[seen:]:
                    if predicate(item):
                        return item
                seen = len(self.items)
                await self._changed.wait()

    async def wait_for_more_than(self, count: int, timeout_s: float = 10.0) -> None:
        """Until more than `count` items have arrived."""
        with anyio.fail_after(timeout_s):
            while len(self.items) <= count:
                await self._changed.wait()


@asynccontextmanager
async def watch_feed(h: Harness, session: str = "main") -> AsyncIterator[FeedWatcher]:
    watcher = FeedWatcher()

    async def pump(stream: AsyncIterator[FeedItem]) -> None:
        async for item in stream:
            watcher.add(item)

    async with h.daemon.subscribe(session) as stream, anyio.create_task_group() as group:
        group.start_soon(pump, stream)
        yield watcher
        group.cancel_scope.cancel()


def last_user_text(body: dict[str, Any]) -> str:
    """The last non-status user message of a model request."""
    for message in reversed(body["messages"]):
        content = message.get("content") or ""
        if message["role"] == "user" and not content.startswith("[Agent status"):
            return str(content)
    return ""
