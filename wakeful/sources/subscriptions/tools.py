"""connect_channel, list_channels, disconnect_channel: the agent's side of subscriptions."""

from __future__ import annotations

import json

import anyio
from pydantic import BaseModel, Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.sources.subscriptions.arming import Subscriptions
from wakeful.sources.subscriptions.kinds.base import Refusal
from wakeful.sources.subscriptions.request import ConnectRequest


class ConnectChannel:
    name = "connect_channel"
    group = "subscriptions"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Subscribe to a new event source; returns a subscription id at once. From then on "
        "each matching occurrence arrives in this session as an event whose data carries "
        "the subscription id (it does not interrupt you); subscriptions survive restarts. "
        "Kinds and their fields: mailbox (account, folder='INBOX', sender and/or subject: "
        "globs such as '*@ci.example.com', or regular expressions with regex=true; new "
        "mail only); webhook (conditions: [{{field: 'a.b', equals: x}} or {{field, pattern}}], "
        "all must hold; you get a URL path and a bearer token, shown once; or hook: the name "
        "of a configured hook, whose matching deliveries then carry the subscription id); "
        "file (path: a file or directory in the workspace, glob: e.g. '*.csv'; changes are "
        "debounced "
        "into one event); shell_output (task_id of a running start_shell task, pattern: "
        "text in an output line, regex=true for a regular expression); http_check (url, "
        "interval_s of at least {min_interval:g}, on: 'status', 'content' or 'any'; the "
        "first check is the baseline). note says what it is for. "
        'Example: {{"kind": "file", "path": "inbox", "glob": "*.pdf", "note": "new invoices"}}'
    )
    Args = ConnectRequest
    read_only = False
    # The most a call can do (http_check); each call is judged by its kind (call_effect).
    effect = Effect.NETWORK
    timeout_s: float | None = 30.0

    def __init__(self, subscriptions: Subscriptions, min_interval_s: float) -> None:
        self._subs = subscriptions
        self.description = ConnectChannel.description.format(min_interval=min_interval_s)

    def call_effect(self, a: ConnectRequest) -> Effect:
        return self._subs.kinds[a.kind].effect

    async def reach(self, a: ConnectRequest) -> Reach:
        return self._subs.kinds[a.kind].reach(a)

    async def run(self, a: ConnectRequest, ctx: ToolContext) -> ToolOutput:
        tainted_by = ctx.taint.summary() if ctx.taint else None
        try:
            sub, planned = await self._subs.connect(
                a, session=ctx.session, workspace=ctx.workspace, tainted_by=tainted_by
            )
        except Refusal as exc:
            return ToolOutput(f"connect_channel: {exc}; nothing was subscribed", is_error=True)
        shown = sub.public()
        text = (
            f"subscribed: {sub.id} ({sub.kind}). Matching occurrences arrive as events with "
            f"subscription {sub.id}; stop them with disconnect_channel.\n"
            + json.dumps(shown["filter"], ensure_ascii=False, sort_keys=True)
        )
        if planned.told:
            text += "\n" + planned.told
        return ToolOutput(
            text, data={"subscription_id": sub.id, "subscription": shown, **planned.told_data}
        )


class _NoArgs(ToolArgs):
    pass  # no arguments (a docstring here would become the schema's description)


class ListChannels:
    name = "list_channels"
    group = "subscriptions"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "List this session's subscriptions made with connect_channel: id, kind, filter, "
        "state (active or ended, and why), how often each fired and what its source is "
        "doing. It only reads. Example: {}"
    )
    Args: type[BaseModel] = _NoArgs
    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 5.0

    def __init__(self, subscriptions: Subscriptions) -> None:
        self._subs = subscriptions

    async def run(self, a: BaseModel, ctx: ToolContext) -> ToolOutput:
        await anyio.lowlevel.checkpoint()
        shown = [s.public() for s in self._subs.book.of_session(ctx.session)]
        if not shown:
            return ToolOutput("no subscriptions in this session", data={"subscriptions": []})
        text = json.dumps(shown, indent=2, ensure_ascii=False)
        return ToolOutput(text, data={"subscriptions": shown})


class DisconnectChannel:
    name = "disconnect_channel"
    group = "subscriptions"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Stop a subscription of this session by its id (from connect_channel or "
        "list_channels): no more events come from it (one already delivered stays). "
        'Example: {"subscription_id": "sub-3f2a9c01be"}'
    )

    class Args(ToolArgs):
        subscription_id: str = Field(min_length=1, description="the id connect_channel returned")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 10.0

    def __init__(self, subscriptions: Subscriptions) -> None:
        self._subs = subscriptions

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        sub = self._subs.book.get(a.subscription_id)
        if sub is None or sub.session != ctx.session:
            known = ", ".join(s.id for s in self._subs.book.of_session(ctx.session))
            return ToolOutput(
                f"disconnect_channel: subscription_id: no subscription {a.subscription_id!r} in "
                f"this session; its subscriptions are: {known or '(none)'}",
                is_error=True,
            )
        await self._subs.disconnect(sub.id)
        return ToolOutput(
            f"disconnected {sub.id} ({sub.kind}); it raises no more events.",
            data={"subscription": sub.public()},
        )
