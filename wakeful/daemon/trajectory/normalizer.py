"""The one place that makes a trajectory valid for model APIs (SPEC §4).

Runs before every model request and after every restart. Two repairs, both
deterministic:

* a tool call with no result gets a placeholder result right after the
  results that do exist, before anything else;
* a tool result whose call is not the immediately preceding assistant
  message's (an orphan, or a second result for the same id) is dropped.

The result satisfies both the OpenAI rule (tool messages follow their
assistant message and answer every ``tool_call_id``) and, after the usual
conversion, Anthropic's (every ``tool_use`` answered in the next message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wakeful.daemon.trajectory.placeholders import missing_result_placeholder, tool_message

Message = dict[str, Any]


@dataclass
class Normalized:
    messages: list[Message]
    placeholders: list[Message] = field(default_factory=list)
    dropped: list[Message] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.placeholders or self.dropped)


def open_calls(message: Message) -> dict[str, str]:
    """call id → tool name for an assistant message's tool calls."""
    if message.get("role") != "assistant":
        return {}
    calls = message.get("tool_calls") or []
    return {call["id"]: call["function"]["name"] for call in calls}


def normalize(messages: list[Message]) -> Normalized:
    result = Normalized(messages=[])
    waiting: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id in waiting:
                del waiting[call_id]
                result.messages.append(message)
            else:
                result.dropped.append(message)
            continue
        _close(waiting, result)
        result.messages.append(message)
        waiting = open_calls(message)
    _close(waiting, result)
    return result


def unanswered_calls(messages: list[Message]) -> dict[str, str]:
    """Calls of the last assistant message that still have no result."""
    waiting: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "tool":
            waiting.pop(message.get("tool_call_id", ""), None)
        else:
            waiting = open_calls(message)
    return waiting


def _close(waiting: dict[str, str], result: Normalized) -> None:
    for call_id, tool in waiting.items():
        placeholder = tool_message(call_id, missing_result_placeholder(tool=tool, call_id=call_id))
        result.messages.append(placeholder)
        result.placeholders.append(placeholder)
    waiting.clear()
