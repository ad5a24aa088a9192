"""The subagents component: tools, the children's scope, task views, and its owned tasks.

Configure declares the tools, the scope (each child's tools and budget) and the
parents' task views. Run keeps the ended children closed and resubmits working
children's tasks *before* sessions resume (then reports started), and owns the
two tasks that follow the children: the feed signals (a child went idle, a
parent was told to stop) and the seconds budgets.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
from anyio.abc import TaskStatus

from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.core.tool import TaskView
from wakeful.subagents.manager import SubagentManager
from wakeful.subagents.records import RecordBook, State
from wakeful.subagents.scope import SubagentScope, note_call
from wakeful.subagents.tools import (
    CancelSubagent,
    GetSubagentStatus,
    ReportToParent,
    SendMessageToSubagent,
    SpawnSubagent,
)
from wakeful.subagents.view import SessionSubagents


class SubagentsComponent:
    name = "subagents"

    async def configure(self, setup: ComponentSetup) -> None:
        tools = setup.registrations.tools
        manager = SubagentManager(
            RecordBook(setup.state),
            setup.store,
            setup.submit,
            setup.sessions,
            setup.settings.subagents,
            tools.names,
        )
        self.manager = manager
        self.feed = setup.feed
        for tool in (
            SpawnSubagent(manager),
            SendMessageToSubagent(manager),
            GetSubagentStatus(manager),
            CancelSubagent(manager),
            ReportToParent(manager),
        ):
            setup.add_tool(tool)
        setup.add_session_scope(SubagentScope(manager, tools))
        tools.watch_calls(partial(note_call, manager))

        def view(session: str) -> TaskView:
            return SessionSubagents(manager, session)

        setup.add_task_view(view)
        setup.add_status("subagents", lambda: _stats(manager))
        setup.set_health("subagents", ComponentHealth(ok=True, detail="ready"))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        manager = self.manager
        # Watching first: a child resuming after a restart goes idle at once.
        with self.feed.observe(manager.observe):
            await manager.recover()
            async with anyio.create_task_group() as group:
                group.start_soon(manager.handle_signals, name="subagent signals")
                group.start_soon(manager.exhaust_when_late, name="subagent time budgets")
                task_status.started()
                await anyio.sleep_forever()


def _stats(manager: SubagentManager) -> dict[str, Any]:
    counts: dict[str, int] = {state.value: 0 for state in State}
    for record in manager.book.all():
        counts[record.state.value] += 1
    return counts
