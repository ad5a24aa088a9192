"""What a daemon component (a channel, the scheduler, systemd integration) gets.

Components are async context managers entered by the lifespan in order,
after the core exists and before sessions resume and HTTP is served, and
exited in reverse. A component may register tools (before any session
makes a model request, so the tool list is byte-stable for the session),
add HTTP routes, start background tasks in ``group`` (which owns them), and
report its health. It sends events only through ``submit`` — the
dispatcher — so there is one path for events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from anyio.abc import TaskGroup
from starlette.routing import BaseRoute, Route

from wakeful.daemon.config import Settings
from wakeful.daemon.feed import Feed
from wakeful.daemon.front_door import SubmitResult
from wakeful.daemon.loop.task_views import SessionTaskViews
from wakeful.daemon.store.base import Store
from wakeful.events import Event
from wakeful.handlers.registry import ToolRegistry


@dataclass
class ComponentHealth:
    ok: bool
    detail: str
    required: bool = False  # /readyz fails while a required component is not ok


@dataclass
class Services:
    settings: Settings
    data_dir: Path
    store: Store
    feed: Feed
    tools: ToolRegistry
    group: TaskGroup
    submit: Callable[[Event], Awaitable[SubmitResult]]
    routes: list[BaseRoute] = field(default_factory=list)
    # Routes taken at high request rates (webhooks): also served ahead of the app's
    # middleware and router (wakeful.daemon.http.hot_routes), with the same answers.
    hot_routes: list[Route] = field(default_factory=list)
    health: dict[str, ComponentHealth] = field(default_factory=dict)
    # Views of components' background tasks per session (task_status, status bar).
    task_views: list[SessionTaskViews] = field(default_factory=list)
    # name → callable returning extra figures for /api/status (and /metrics)
    status_providers: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)


Component = Callable[[Services], AbstractAsyncContextManager[object]]


@runtime_checkable
class Reloadable(Protocol):
    """Optional: the object a component's context manager yields may implement this.

    On SIGHUP the daemon re-reads its configuration and calls ``reload`` on
    each such object with the new settings (hooks, timers in config, …). It
    applies what can change live and returns the names of the top-level
    config sections it took over (e.g. ``["hooks"]``), or raises
    :class:`ValueError` saying what it could not apply; the daemon logs
    either and keeps running.
    """

    async def reload(self, settings: Settings) -> list[str]: ...
