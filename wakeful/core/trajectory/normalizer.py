"""The one place that makes a trajectory valid for model APIs (SPEC §4).

Runs before every model request and after every restart. Two repairs, both
deterministic:

* a tool call with no result gets a placeholder result right after the
  results that do exist, before anything else;
* a tool result whose call is not the immediately preceding assistant
  message's (an orphan, or a second result for the same id) is dropped.

A side session (SPEC §5 parallel) asks for ``cut_unfinished``: a step whose
calls are still running is left out whole instead of given placeholders, so
the side session's request does not make the main task look interrupted.

The result satisfies both the OpenAI rule (tool messages follow their
assistant message and answer every ``tool_call_id``) and, after the usual
conversion, Anthropic's (every ``tool_use`` answered in the next message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wakeful.core.trajectory.placeholders import missing_result_placeholder, tool_message

Message = dict[str, Any]


@dataclass
class Normalized:
    messages: list[Message]
    placeholders: list[Message] = field(default_factory=list)
    dropped: list[Message] = field(default_factory=list)
    # cut_unfinished: the steps left out, and their unanswered calls (id → tool).
    cut: list[Message] = field(default_factory=list)
    unfinished: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.placeholders or self.dropped or self.cut)


def open_calls(message: Message) -> dict[str, str]:
    """call id → tool name for an assistant message's tool calls."""
    if message.get("role") != "assistant":
        return {}
    calls = message.get("tool_calls") or []
    return {call["id"]: call["function"]["name"] for call in calls}


def normalize(messages: list[Message], *, cut_unfinished: bool = False) -> Normalized:
    """The trajectory as a model request may carry it (see the module docstring)."""
    result = Normalized(messages=[])
    waiting: dict[str, str] = {}
    step_start = 0  # where the assistant message of the open step is in result.messages
    for message in messages:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id in waiting:
                del waiting[call_id]
                result.messages.append(message)
            else:
                result.dropped.append(message)
            continue
        _close(waiting, result, step_start, cut_unfinished)
        step_start = len(result.messages)
        result.messages.append(message)
        waiting = open_calls(message)
    _close(waiting, result, step_start, cut_unfinished)
    return result


def _close(waiting: dict[str, str], result: Normalized, step_start: int, cut: bool) -> None:
    """End the open step: placeholders for its unanswered calls, or (cut) leave it out."""
    if waiting and cut:
        result.cut.extend(result.messages[step_start:])
        del result.messages[step_start:]
        result.unfinished.update(waiting)
    elif waiting:
        for call_id, tool in waiting.items():
            text = missing_result_placeholder(tool=tool, call_id=call_id)
            result.messages.append(tool_message(call_id, text))
            result.placeholders.append(result.messages[-1])
    waiting.clear()
