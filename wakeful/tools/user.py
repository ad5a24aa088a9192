"""reply_to_user and send_user_notification: say something to the owner now."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput


class ReplyToUser:
    name = "reply_to_user"
    resident = True  # sent with its schema in every request (tool_surface.py)
    description = (
        "Send a message to the user right now, while you keep working: progress updates, "
        "answers to questions asked in the middle of a task, or the final result. The "
        "user may not see your other output, so anything they should read goes here. It "
        "cannot ask and wait for an answer (the user's reply, if any, arrives later as a "
        "new event). "
        'Example: {"text": "The build passed; now running the integration tests."}'
    )

    class Args(ToolArgs):
        text: str = Field(min_length=1, description="the message, as the user should read it")

    # Only talks to the owner, so parallel side sessions may use it.
    read_only = True
    effect = Effect.OWNER
    timeout_s: float | None = 30.0

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        # Keyed by the call: a call retried after a restart is the same message, once.
        return ToolOutput(await ctx.outbox.send(a.text, key=f"{ctx.session}:tool:{ctx.call_id}"))


class SendUserNotification:
    name = "send_user_notification"
    resident = True  # sent with its schema in every request (tool_surface.py)
    description = (
        "Notify the user of something they did not just ask about (a timer fired, a build "
        "failed, an email needs them). It reaches them even when they are offline: the "
        "channel is picked by urgency — low/normal: where they last wrote; high/urgent: "
        "also their urgent channels and the web page. Use reply_to_user to answer a "
        "message. "
        'Example: {"text": "The nightly backup failed: disk full on /srv.", "urgency": "high"}'
    )

    class Args(ToolArgs):
        text: str = Field(min_length=1, description="the notification, as the user should read it")
        urgency: Literal["low", "normal", "high", "urgent"] = Field(
            default="normal", description="how soon the user must see it"
        )

    read_only = True
    effect = Effect.OWNER
    timeout_s: float | None = 30.0

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        key = f"{ctx.session}:tool:{ctx.call_id}"
        return ToolOutput(await ctx.outbox.notify(a.text, urgency=a.urgency, key=key))
