"""spawn_subagent and its family: delegate a task to a child session without waiting."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.subagents.limits import BudgetAsked, Refused
from wakeful.subagents.manager import SubagentManager
from wakeful.subagents.view import describe


class BudgetArgs(ToolArgs):
    model_calls: int | None = Field(default=None, ge=1, description="most model calls")
    tokens: int | None = Field(default=None, ge=1, description="most tokens (prompt + output)")
    seconds: float | None = Field(default=None, gt=0, description="most wall-clock seconds")


class SpawnSubagent:
    name = "spawn_subagent"
    group = "subagents"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Delegate a task to a subagent: a child session with its own conversation that "
        "works in the background with some of your tools. Returns its id at once; its "
        "final answer arrives later as a subagent.result event (do not wait or poll). Give "
        "it everything it needs in task: it does not see this conversation. tools "
        "(optional) narrows what it may use (default: your tools); budget (optional) caps "
        "its model calls, tokens and seconds. get_subagent_status / send_message_to_"
        "subagent / cancel_subagent manage it. "
        'Example: {"task": "Run the test suite in ./app and summarise the failures", '
        '"tools": ["shell_exec", "read_file"], "budget": {"model_calls": 10}}'
    )

    class Args(ToolArgs):
        task: str = Field(min_length=1, max_length=20_000, description="what to do, in full")
        tools: list[str] | None = Field(
            default=None, description="names of your tools it may use; omit for all of them"
        )
        budget: BudgetArgs | None = Field(default=None, description="limits; omit for defaults")

    read_only = False
    effect = Effect.CONTROL  # its own calls pass the policy chain, tainted as this session
    timeout_s: float | None = 30.0

    def __init__(self, manager: SubagentManager) -> None:
        self._manager = manager

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        budget = a.budget
        asked = None if budget is None else BudgetAsked(**budget.model_dump())
        try:
            record = await self._manager.spawn(
                ctx.session,
                ctx.call_id,
                a.task,
                a.tools,
                asked,
                tainted_by=ctx.taint.summary() if ctx.taint else None,
            )
        except Refused as exc:
            return ToolOutput(f"no subagent was started: {exc}", is_error=True)
        info = describe(record)
        return ToolOutput(
            f"started subagent {record.subagent_id}; its result will arrive as a "
            f"subagent.result event.\n{_dump(info)}",
            data=info,
        )


class SendMessageToSubagent:
    name = "send_message_to_subagent"
    group = "subagents"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Send more instructions or an answer to one of your subagents; it reads them at its "
        "next safe point (a finished one starts again) and its next answer arrives as a "
        "subagent.result event. "
        'Example: {"subagent_id": "sub-1a2b3c4d5e", "text": "also check the docs folder"}'
    )

    class Args(ToolArgs):
        subagent_id: str = Field(min_length=1, description="the id spawn_subagent returned")
        text: str = Field(min_length=1, max_length=20_000, description="the message")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 30.0

    def __init__(self, manager: SubagentManager) -> None:
        self._manager = manager

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            text = await self._manager.send_message(ctx.session, a.subagent_id, a.text, ctx.call_id)
        except Refused as exc:
            return ToolOutput(str(exc), is_error=True)
        return ToolOutput(text)


class GetSubagentStatus:
    name = "get_subagent_status"
    group = "subagents"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "The state of one of your subagents (running, idle: answered and waiting, cancelled, "
        "exhausted: budget used up), its budget and what it has used, its last result. Omit "
        'subagent_id to list them all. Example: {"subagent_id": "sub-1a2b3c4d5e"}'
    )

    class Args(ToolArgs):
        subagent_id: str | None = Field(default=None, description="omit to list all")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 10.0

    def __init__(self, manager: SubagentManager) -> None:
        self._manager = manager

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        manager = self._manager
        if a.subagent_id is None:
            children = [describe(r) for r in manager.book.children_of(ctx.session)]
            if not children:
                return ToolOutput("this session has no subagents", data={"subagents": []})
            return ToolOutput(_dump(children), data={"subagents": children})
        try:
            record = manager.child_of(ctx.session, a.subagent_id)
        except Refused as exc:
            return ToolOutput(str(exc), is_error=True)
        used = await manager.usage(record)
        info = {
            **describe(record),
            "used": {
                "model_calls": used.model_calls,
                "tokens": used.tokens,
                "seconds": round(used.seconds, 1),
            },
        }
        return ToolOutput(_dump(info), data=info)


class CancelSubagent:
    name = "cancel_subagent"
    group = "subagents"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "End one of your subagents for good: its model call and tool calls are stopped "
        "(shell commands with their whole process group), and so are its own subagents. "
        "What it did so far may be partly done - check before redoing it. "
        'Example: {"subagent_id": "sub-1a2b3c4d5e"}'
    )

    class Args(ToolArgs):
        subagent_id: str = Field(min_length=1, description="the id spawn_subagent returned")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 30.0

    def __init__(self, manager: SubagentManager) -> None:
        self._manager = manager

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            record = self._manager.child_of(ctx.session, a.subagent_id)
        except Refused as exc:
            return ToolOutput(str(exc), is_error=True)
        if record.state.ended:
            return ToolOutput(
                f"{a.subagent_id} had already ended ({record.state.value})", data=describe(record)
            )
        await self._manager.cancel(record, f"cancelled by its parent {ctx.session}")
        info = describe(record)
        return ToolOutput(f"cancelled {a.subagent_id}:\n{_dump(info)}", data=info)


class ReportToParent:
    name = "report_to_parent"
    group = "subagents"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Only in a subagent: send something to your parent session now, before your final "
        "answer (a finding it needs early, a question). urgent=true interrupts the parent "
        "at once; use it only when the parent must change course. Your final answer is "
        'delivered on its own. Example: {"text": "the build is broken on main", "urgent": true}'
    )

    class Args(ToolArgs):
        text: str = Field(min_length=1, max_length=20_000, description="what to tell the parent")
        urgent: bool = Field(default=False, description="true: interrupt the parent now")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 30.0

    def __init__(self, manager: SubagentManager) -> None:
        self._manager = manager

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            text = await self._manager.report(ctx.session, ctx.call_id, a.text, a.urgent)
        except Refused as exc:
            return ToolOutput(str(exc), is_error=True)
        return ToolOutput(text)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
