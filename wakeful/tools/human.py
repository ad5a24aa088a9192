"""request_human_approval and request_human_input: asking the owner, without waiting.

Both file a request on the approvals machinery (wakeful/core/approvals.py)
and return at once; the owner's answer — or, after the timeout, the
conservative default — arrives later as a ``tool.result`` event for the call,
exactly like a tool call the policy held for approval.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput

MAX_QUESTION = 2000


class FiledRequest(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def requested_at(self) -> str: ...

    @property
    def expires_at(self) -> str: ...


class OwnerRequests(Protocol):
    """Where requests to the owner are filed (the daemon's approvals)."""

    async def request(
        self,
        *,
        session: str,
        call_id: str,
        tool: str,
        arguments: str,
        reason: str,
        tainted_by: str | None,
        kind: str = "call",
        default: str | None = None,
        timeout_s: float | None = None,
    ) -> FiledRequest: ...


def asked_placeholder(what: str, call_id: str, request: FiledRequest, if_silent: str) -> str:
    return (
        f"[placeholder] {what} is with the owner as request {request.id} (asked at "
        f"{request.requested_at}). Their answer arrives as a new event (a tool.result event for "
        f"call {call_id}); if nobody answers by {request.expires_at}, {if_silent}. Do not assume "
        "an answer meanwhile."
    )


async def ask_owner(
    requests: OwnerRequests,
    tool: str,
    a: Any,
    ctx: ToolContext,
    *,
    kind: str,
    if_silent: str,
    default: str | None = None,
) -> ToolOutput:
    """File the question and give the model the honest placeholder for it."""
    filed = await requests.request(
        session=ctx.session,
        call_id=ctx.call_id,
        tool=tool,
        arguments=json.dumps(a.model_dump(exclude_none=True)),
        reason=a.question,
        tainted_by=ctx.taint.summary() if ctx.taint else None,
        kind=kind,
        default=default,
        timeout_s=a.timeout_s,
    )
    text = asked_placeholder("your question", ctx.call_id, filed, if_silent)
    return ToolOutput(text, data={"approval_id": filed.id})


class RequestHumanApproval:
    name = "request_human_approval"
    group = "ask the owner"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Ask the owner to approve something before you do it: a decision only they should "
        "make. Returns at once with a request id; their answer (approved, with an optional "
        "note, or no) arrives later as a tool.result event for this call. If nobody answers "
        "within timeout_s (at most the operator's approval timeout) the answer is no. Tool "
        "calls that need approval ask on their own: use this for decisions, not for tools. "
        'Example: {"question": "Cancel the 3 pm meeting with Pat and tell them why?"}'
    )

    class Args(ToolArgs):
        question: str = Field(
            min_length=1, max_length=MAX_QUESTION, description="what you want approved"
        )
        timeout_s: int | None = Field(
            default=None, ge=60, description="seconds to wait at most (default: the operator's)"
        )

    read_only = False
    effect = Effect.OWNER
    timeout_s: float | None = 10.0

    def __init__(self, requests: OwnerRequests) -> None:
        self._requests = requests

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        return await ask_owner(
            self._requests, self.name, a, ctx, kind="question", if_silent="the answer is no"
        )


class RequestHumanInput:
    name = "request_human_input"
    group = "ask the owner"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Ask the owner a question whose answer you need (a choice, a missing fact). Returns "
        "at once with a request id; their answer arrives later as a tool.result event for "
        "this call. If nobody answers within timeout_s (at most the operator's approval "
        "timeout) the result is your default: make it the conservative choice. "
        'Example: {"question": "Which address should the invoice go to?", '
        '"default": "do not send the invoice yet"}'
    )

    class Args(ToolArgs):
        question: str = Field(min_length=1, max_length=MAX_QUESTION, description="the question")
        default: str = Field(
            min_length=1,
            max_length=500,
            description="what happens if nobody answers: the conservative choice",
        )
        timeout_s: int | None = Field(
            default=None, ge=60, description="seconds to wait at most (default: the operator's)"
        )

    read_only = False
    effect = Effect.OWNER
    timeout_s: float | None = 10.0

    def __init__(self, requests: OwnerRequests) -> None:
        self._requests = requests

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        if_silent = f"the default applies ({a.default})"
        return await ask_owner(
            self._requests, self.name, a, ctx, kind="input", if_silent=if_silent, default=a.default
        )
