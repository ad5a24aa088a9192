"""What each kind of endpoint accepts of reasoning on the messages it is sent.

The fake model server checks every request against one of these, so a test
proves that wakeful replays reasoning the way that endpoint needs and strips
what it would reject:

* ``openai``: vanilla chat completions; no reasoning field on any message.
* ``deepseek``: thinking mode; an assistant message with tool calls must carry
  its ``reasoning_content``, a plain assistant message must not.
* ``openrouter``: ``reasoning`` text and ``reasoning_details`` items accepted.

Under every rule set, wakeful's own stored field (a ``reasoning`` *object*)
must never be on the wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

ReasoningRules = Literal["openai", "deepseek", "openrouter"]
_WIRE_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
_ACCEPTED: dict[str, tuple[str, ...]] = {
    "openai": (),
    "deepseek": ("reasoning_content",),
    "openrouter": ("reasoning", "reasoning_details"),
}


def reasoning_violations(messages: Sequence[Any], rules: ReasoningRules) -> list[str]:
    problems: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("reasoning"), dict):
            problems.append(f"message {index}: wakeful's stored reasoning object was sent")
            continue
        for name in _WIRE_FIELDS:
            if name in message and name not in _ACCEPTED[rules]:
                problems.append(f"message {index}: {rules} rejects the {name} field")
        if rules == "deepseek" and message.get("role") == "assistant":
            problems.extend(_deepseek(index, message))
    return problems


def _deepseek(index: int, message: dict[str, Any]) -> list[str]:
    has_reasoning = isinstance(message.get("reasoning_content"), str)
    if message.get("tool_calls") and not has_reasoning:
        return [f"message {index}: deepseek needs reasoning_content with tool calls"]
    if not message.get("tool_calls") and has_reasoning:
        return [f"message {index}: deepseek rejects reasoning_content on a plain turn"]
    return []
