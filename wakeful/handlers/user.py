"""reply_to_user: say something to the owner now."""

from __future__ import annotations

from pydantic import Field

from wakeful.handlers.base import ToolArgs, ToolContext, ToolOutput


class ReplyToUser:
    name = "reply_to_user"
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
    timeout_s: float | None = 30.0

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        # Keyed by the call: a call retried after a restart is the same message, once.
        return ToolOutput(await ctx.outbox.send(a.text, key=f"{ctx.session}:tool:{ctx.call_id}"))
