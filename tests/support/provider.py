"""A model provider that answers from a script, for the core tier (no HTTP).

Each :class:`Step` is one scripted reply: text, tool calls or an error.
A step may ``hold`` the call on an event (after streaming its ``deltas``), so a
test can keep the model mid-call while it sends a stop, a message or a question.
Every :class:`ModelRequest` is recorded, in order, with the step that answered it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from tests.support.changes import Changes
from wakeful.core.loop.parallel import SIDE_QUESTION_NOTE
from wakeful.core.provider import (
    DeltaCallback,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)

RequestFilter = Callable[[ModelRequest], bool]

_call_ids = itertools.count(1)


def tool_call(
    name: str, args: dict[str, Any] | None = None, call_id: str | None = None
) -> ToolCall:
    """A tool call as a model would make it (a fresh id unless one is given)."""
    return ToolCall(call_id or f"call_{next(_call_ids)}", name, json.dumps(args or {}))


def side_session(request: ModelRequest) -> bool:
    """The request of a side session answering a quick question in parallel."""
    last = request.messages[-1] if request.messages else {}
    return request.session is None and SIDE_QUESTION_NOTE in str(last.get("content"))


def main_session(request: ModelRequest) -> bool:
    """A session loop's own request (it names its session; one-off calls do not)."""
    return request.session is not None


@dataclass(eq=False)
class Step:
    """One scripted model call: what it answers, and how it behaves meanwhile."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # Raised instead of answering: a ProviderError fails the call; anything else is a
    # bug in the provider, which crashes the run (its supervisor restarts the loop).
    error: Exception | None = None
    deltas: tuple[str, ...] = ()  # streamed before the hold: rule 4's partial output
    hold: anyio.Event | None = None  # the call waits for this before it answers
    when: RequestFilter | None = None  # only a request this accepts takes the step
    # Filled in as the step is taken and runs.
    request: ModelRequest | None = None
    taken: anyio.Event = field(default_factory=anyio.Event)
    cancelled: bool = False  # the caller cancelled the call (an interrupt)

    def release(self) -> None:
        assert self.hold is not None, "release() of a step that does not hold"
        self.hold.set()

    def response(self) -> ModelResponse:
        return ModelResponse(
            content=self.text,
            tool_calls=self.tool_calls,
            finish_reason="tool_calls" if self.tool_calls else "stop",
            usage=Usage(),  # no prompt tokens: the context's estimate stays uncalibrated
            model="scripted",
            latency_s=0.0,
        )


def reply(text: str, *, when: RequestFilter | None = main_session, hold: bool = False) -> Step:
    """A final text reply to the session's loop (``when=None``: to any request)."""
    return Step(text=text, when=when, hold=anyio.Event() if hold else None)


def side_reply(text: str) -> Step:
    """The answer of a side session (the parallel strategy)."""
    return Step(text=text, when=side_session)


def calls(*tool_calls: ToolCall, text: str = "", hold: bool = False) -> Step:
    """A reply to the session's loop that calls tools."""
    held = anyio.Event() if hold else None
    return Step(text=text, tool_calls=tuple(tool_calls), when=main_session, hold=held)


def fails(error: Exception, *, when: RequestFilter | None = main_session) -> Step:
    return Step(error=error, when=when)


class ScriptedProvider:
    """The ModelProvider protocol (wakeful/core/provider.py), answered from a script.

    A request no scripted step accepts waits until one is scripted, or gets a
    ``default`` text reply when one is set (for generated scenarios)."""

    def __init__(self, changes: Changes, *, default: str | None = None) -> None:
        self._changes = changes
        self._script: list[Step] = []
        self.default = default
        self.requests: list[ModelRequest] = []
        self.steps: list[Step] = []  # the steps taken, in the order of the requests

    @property
    def configured(self) -> bool:
        return True

    def describe(self) -> str:
        return "scripted model (tests/support/provider.py)"

    def script(self, *steps: Step) -> Sequence[Step]:
        self._script.extend(steps)
        self._changes.ping()
        return steps

    @property
    def unused(self) -> list[Step]:
        return list(self._script)

    async def complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        self.requests.append(request)
        step = await self._take(request)
        step.request = request
        self.steps.append(step)
        step.taken.set()
        self._changes.ping()
        try:
            for delta in step.deltas:
                if on_delta is not None:
                    await on_delta(delta)
            if step.hold is not None:
                await step.hold.wait()
        except anyio.get_cancelled_exc_class():
            step.cancelled = True
            self._changes.ping()
            raise
        if step.error is not None:
            raise step.error
        return step.response()

    async def _take(self, request: ModelRequest) -> Step:
        def first_match() -> Step | None:
            for step in self._script:
                if step.when is None or step.when(request):
                    self._script.remove(step)
                    return step
            if self.default is not None:
                return Step(text=self.default)
            return None

        found: list[Step] = []

        def matched() -> bool:
            step = first_match()
            if step is not None:
                found.append(step)
            return step is not None

        await self._changes.until(matched, f"a scripted reply for request {len(self.requests)}")
        return found[0]

    async def aclose(self) -> None:
        pass
