"""The shell-task component: tools, task views, recovery, and owned tasks.

Configured before sessions resume, so the tools are in every session's tool
list from its first request. Its run phase owns every background command and
the recovery pass; the daemon stopping cancels them, which stops each
command's process group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.core.tool import TaskView
from wakeful.core.tool_output import saved_outputs_dir
from wakeful.safety.sandbox import daemon_sandbox, off_result_text
from wakeful.sources.shell.manager import ShellOptions, ShellTaskManager
from wakeful.sources.shell.records import Loaded, RecordStore
from wakeful.sources.shell.recovery import report_unfinished
from wakeful.sources.shell.tools import MonitorShell, StartShell
from wakeful.sources.shell.view import SessionShellTasks
from wakeful.store.fleet.ttl import DEFAULT_TTL_S

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings
    from wakeful.sources.shell.fleet import TaskRoster

log = structlog.get_logger(__name__)


def shell_options(settings: Settings) -> ShellOptions:
    shell = settings.shell
    return ShellOptions(
        grace_s=settings.loop.stop_grace_s,
        events_per_window=shell.output_events_per_window,
        window_s=shell.output_window_s,
        memory_lines=shell.memory_lines,
        retain_s=shell.retain_days * 86400,
    )


class ShellComponent:
    """start_shell / monitor_shell, their task views, and recovery after a restart."""

    name = "shell"
    lease_ttl_s = DEFAULT_TTL_S  # daemons sharing the store: how soon a gone one is noticed

    async def configure(self, setup: ComponentSetup) -> None:
        directory = setup.data_dir / "tasks"
        directory.mkdir(mode=0o700, exist_ok=True)
        # Full outputs go among the saved outputs, where read_file may read them
        # (it may not read the task records, or anything else in the data directory).
        logs = saved_outputs_dir(setup.data_dir) / "tasks"
        logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.roster = await _roster(setup, self.lease_ttl_s)
        records = RecordStore(directory, logs=logs)
        if self.roster is not None:
            from wakeful.sources.shell.fleet import FleetRecordStore

            records = FleetRecordStore(directory, self.roster, logs=logs)
        self._submit = setup.submit
        manager = ShellTaskManager(
            records,
            setup.submit,
            None,
            shell_options(setup.settings),
            # The same sandbox as shell_exec's (built from the same settings; probed once).
            daemon_sandbox(setup.settings, setup.data_dir),
        )
        self.manager = manager
        if manager.sandbox.off:
            # Fail closed: without a sandbox no background command may start either.
            for name in ("start_shell", "monitor_shell"):
                text = off_result_text(name, str(manager.sandbox.off_because))
                setup.registrations.tools.switch_off(name, text)
        else:
            setup.add_tool(StartShell(manager))
            setup.add_tool(MonitorShell(manager))

        def view(session: str) -> TaskView:
            return SessionShellTasks(manager, session)

        setup.add_task_view(view)
        setup.add_status("shell_tasks", lambda: _stats(manager))
        setup.set_health("shell", ComponentHealth(ok=True, detail="ready"))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        if self.roster is None:
            await self._run_commands(task_status)
            return
        await self.roster.claim_lease()  # before any task is listed under this daemon
        # The lease outlives the commands: it is let go only after each stopped
        # command's record is saved, so the daemon noticing reports what really happened.
        holding = anyio.CancelScope(shield=True)

        async def hold(roster: TaskRoster) -> None:
            with holding:
                await roster.hold(self._submit)

        async with anyio.create_task_group() as fleet:
            fleet.start_soon(hold, self.roster, name="shell task ownership")
            try:
                await self._run_commands(task_status)
            finally:
                holding.cancel()

    async def _run_commands(self, task_status: TaskStatus[None]) -> None:
        # This group owns every background command; the daemon stopping cancels it,
        # which stops each command's process group.
        async with anyio.create_task_group() as group:
            self.manager.attach(group)
            # The last run's records, read before this run can start a command: read
            # after, a command started in the first moments (an event queued before a
            # restart, answered at once) was taken for a leftover and killed as "lost".
            # Reporting them (and stopping groups that outlived the daemon) goes on in
            # the background.
            left = await self.manager.records.load_all()
            group.start_soon(_recover, self.manager, left, name="shell task recovery")
            task_status.started()
            await anyio.sleep_forever()


async def _roster(setup: ComponentSetup, ttl_s: float) -> TaskRoster | None:
    """Where daemons share the store, the fleet's list of shell tasks (None: one daemon)."""
    coordination = await setup.resources.enter_async_context(setup.store.coordination("shell"))
    if coordination is None:
        return None
    from wakeful.sources.shell.fleet import TaskRoster

    return TaskRoster(coordination, ttl_s)


async def _recover(manager: ShellTaskManager, left: Loaded) -> None:
    try:
        count = await report_unfinished(manager, left)
    except Exception:  # a damaged record must not take the daemon down
        log.exception("shell task recovery failed")
        return
    if count:
        log.warning("shell tasks from before the restart reported", count=count)


def _stats(manager: ShellTaskManager) -> dict[str, Any]:
    return {"running": manager.running_count()}
