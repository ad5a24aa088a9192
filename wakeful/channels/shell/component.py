"""The shell-task component: tools, task views, recovery, and owned tasks.

Entered by the daemon's lifespan before sessions resume, so the tools are
in every session's tool list from its first request. Its own task group owns
every background command and the recovery pass; leaving the component (the
daemon stopping) cancels them, which stops each command's process group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog

from wakeful.channels.shell.manager import ShellOptions, ShellTaskManager
from wakeful.channels.shell.records import RecordStore
from wakeful.channels.shell.recovery import report_unfinished
from wakeful.channels.shell.tools import MonitorShell, StartShell
from wakeful.channels.shell.view import SessionShellTasks
from wakeful.daemon.components.context import ComponentHealth, Services
from wakeful.handlers.base import TaskView

log = structlog.get_logger(__name__)


def shell_options(services: Services) -> ShellOptions:
    shell = services.settings.shell
    return ShellOptions(
        grace_s=services.settings.loop.stop_grace_s,
        events_per_window=shell.output_events_per_window,
        window_s=shell.output_window_s,
        memory_lines=shell.memory_lines,
        retain_s=shell.retain_days * 86400,
    )


@asynccontextmanager
async def shell_component(services: Services) -> AsyncIterator[ShellTaskManager]:
    directory = services.data_dir / "tasks"
    directory.mkdir(mode=0o700, exist_ok=True)
    async with anyio.create_task_group() as group:
        manager = ShellTaskManager(
            RecordStore(directory), services.submit, group, shell_options(services)
        )
        services.tools.register(StartShell(manager))
        services.tools.register(MonitorShell(manager))

        def view(session: str) -> TaskView:
            return SessionShellTasks(manager, session)

        services.task_views.append(view)
        services.status_providers["shell_tasks"] = lambda: _stats(manager)
        services.health["shell"] = ComponentHealth(ok=True, detail="ready")
        group.start_soon(_recover, manager, name="shell task recovery")
        yield manager
        group.cancel_scope.cancel()


async def _recover(manager: ShellTaskManager) -> None:
    try:
        count = await report_unfinished(manager)
    except Exception:  # a damaged record must not take the daemon down
        log.exception("shell task recovery failed")
        return
    if count:
        log.warning("shell tasks from before the restart reported", count=count)


def _stats(manager: ShellTaskManager) -> dict[str, Any]:
    return {"running": manager.running_count()}
