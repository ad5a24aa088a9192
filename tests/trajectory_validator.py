"""Strict checks that a trajectory would be accepted by real model APIs.

Two rule sets: OpenAI chat completions (the canonical form wakeful stores)
and Anthropic Messages (after the conversion every adapter performs). The
fake model server runs both on every request it receives, so any test that
talks to a model also proves the trajectory it sent was well formed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

Message = dict[str, Any]

OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
USER_PART_TYPES = frozenset({"text", "image_url", "input_audio", "file"})


class TrajectoryError(ValueError):
    """The trajectory breaks a rule the model API enforces."""

    def __init__(self, index: int | None, reason: str) -> None:
        where = "trajectory" if index is None else f"message {index}"
        super().__init__(f"{where}: {reason}")
        self.index = index
        self.reason = reason


# --- OpenAI ---------------------------------------------------------------


def validate_openai(messages: Sequence[Message], tools: Sequence[Any] | None = None) -> None:
    """Raise TrajectoryError if the OpenAI chat-completions API would reject `messages`."""
    if not isinstance(messages, Sequence) or not messages:
        raise TrajectoryError(None, "messages must be a non-empty list")
    tool_names = _tool_names(tools) if tools else None
    seen_ids: set[str] = set()
    pending: dict[str, int] = {}  # call id -> index of the assistant message
    for index, message in enumerate(messages):
        role = _openai_role(index, message)
        if pending and role != "tool":
            raise TrajectoryError(
                index,
                f"{role} message before the tool results for {sorted(pending)} "
                f"(called in message {min(pending.values())})",
            )
        if role == "tool":
            _check_tool_message(index, message, pending, seen_ids)
        elif role == "assistant":
            calls = _check_assistant(index, message, tool_names)
            for call_id in calls:
                if call_id in seen_ids:
                    raise TrajectoryError(index, f"duplicate tool call id {call_id!r}")
                seen_ids.add(call_id)
                pending[call_id] = index
        else:
            _check_plain_content(index, role, message)
    if pending:
        raise TrajectoryError(
            min(pending.values()), f"tool calls {sorted(pending)} have no tool result"
        )


def _openai_role(index: int, message: Any) -> str:
    if not isinstance(message, dict):
        raise TrajectoryError(index, f"message must be an object, got {type(message).__name__}")
    role = message.get("role")
    if role not in OPENAI_ROLES:
        raise TrajectoryError(index, f"invalid role {role!r}")
    return str(role)


def _tool_names(tools: Sequence[Any]) -> set[str]:
    names: set[str] = set()
    for position, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise TrajectoryError(None, f"tools[{position}] has no function name")
        names.add(name)
    return names


def _check_plain_content(index: int, role: str, message: Message) -> None:
    content = message.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise TrajectoryError(index, f"{role} content must be a string or a non-empty list")
    allowed = USER_PART_TYPES if role == "user" else frozenset({"text"})
    for part in content:
        if not isinstance(part, dict) or part.get("type") not in allowed:
            raise TrajectoryError(index, f"invalid {role} content part {part!r}")
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise TrajectoryError(index, "text content part without a string 'text'")


def _check_assistant(index: int, message: Message, tool_names: set[str] | None) -> list[str]:
    """Check one assistant message and return the ids of the calls it makes."""
    calls = message.get("tool_calls")
    content = message.get("content")
    if calls is None:
        if content is None and message.get("refusal") is None:
            raise TrajectoryError(index, "assistant message with neither content nor tool_calls")
    elif not isinstance(calls, list) or not calls:
        raise TrajectoryError(index, "assistant tool_calls must be a non-empty list when present")
    if content is not None:
        _check_plain_content(index, "assistant", message)
    return [_check_call(index, call, tool_names) for call in calls or []]


def _check_call(index: int, call: Any, tool_names: set[str] | None) -> str:
    if not isinstance(call, dict):
        raise TrajectoryError(index, f"tool call must be an object, got {call!r}")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise TrajectoryError(index, f"tool call without a string id: {call!r}")
    if call.get("type") != "function":
        raise TrajectoryError(index, f"tool call {call_id!r} has type {call.get('type')!r}")
    function = call.get("function")
    if not isinstance(function, dict):
        raise TrajectoryError(index, f"tool call {call_id!r} has no function object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise TrajectoryError(index, f"tool call {call_id!r} has no function name")
    if not isinstance(function.get("arguments"), str):
        raise TrajectoryError(index, f"tool call {call_id!r} arguments must be a JSON string")
    if tool_names is not None and name not in tool_names:
        raise TrajectoryError(index, f"tool call {call_id!r} names unknown function {name!r}")
    return call_id


def _check_tool_message(
    index: int, message: Message, pending: dict[str, int], seen_ids: set[str]
) -> None:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise TrajectoryError(index, "tool message without a tool_call_id")
    if call_id not in pending:
        kind = "duplicate" if call_id in seen_ids else "orphan"
        raise TrajectoryError(
            index, f"{kind} tool result for {call_id!r}: no preceding unanswered call"
        )
    del pending[call_id]
    _check_plain_content(index, "tool", message)


# --- Anthropic ------------------------------------------------------------


def to_anthropic(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """Convert OpenAI-form messages to Anthropic's (system, messages), as adapters do."""
    system_parts: list[str] = []
    converted: list[Message] = []
    for index, message in enumerate(messages):
        role = _openai_role(index, message)
        if role in ("system", "developer"):
            system_parts.append(_text_of(message.get("content")))
            continue
        anthropic_role = "assistant" if role == "assistant" else "user"
        blocks = _anthropic_blocks(index, role, message)
        if converted and converted[-1]["role"] == anthropic_role:
            converted[-1]["content"].extend(blocks)
        else:
            converted.append({"role": anthropic_role, "content": blocks})
    return ("\n\n".join(system_parts) if system_parts else None), converted


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _anthropic_blocks(index: int, role: str, message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    if role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": _text_of(content),
            }
        ]
    blocks: list[dict[str, Any]] = []
    calls = message.get("tool_calls") or []
    if isinstance(content, str) and (content or not calls):
        # Adapters drop an empty text beside tool calls; alone it is an error.
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        blocks.extend(_convert_part(part) for part in content)
    blocks.extend(_tool_use_block(index, call) for call in calls)
    return blocks


def _convert_part(part: Any) -> dict[str, Any]:
    if isinstance(part, dict) and part.get("type") == "text":
        return {"type": "text", "text": part.get("text")}
    return {"type": "image", "source": part}


def _tool_use_block(index: int, call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise TrajectoryError(
            index, f"tool call {call.get('id')!r} arguments are not valid JSON: {exc}"
        ) from None
    if not isinstance(parsed, dict):
        raise TrajectoryError(
            index, f"tool call {call.get('id')!r} arguments must be a JSON object for tool_use"
        )
    return {"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": parsed}


def validate_anthropic(system: str | None, messages: Sequence[Message]) -> None:
    """Raise TrajectoryError if the Anthropic Messages API would reject this request."""
    if system is not None and not isinstance(system, str):
        raise TrajectoryError(None, "system must be a string")
    if not messages:
        raise TrajectoryError(None, "messages must be a non-empty list")
    seen_ids: set[str] = set()
    unanswered: set[str] = set()
    for index, message in enumerate(messages):
        expected = "user" if index % 2 == 0 else "assistant"
        if message.get("role") != expected:
            raise TrajectoryError(
                index,
                f"expected role {expected!r} (alternating, starting with user), "
                f"got {message.get('role')!r}",
            )
        blocks = _anthropic_content(index, message.get("content"))
        if expected == "user":
            _check_user_blocks(index, blocks, unanswered)
            unanswered = set()
        else:
            unanswered = _check_assistant_blocks(index, blocks, seen_ids)
    if unanswered:
        raise TrajectoryError(len(messages) - 1, f"tool_use {sorted(unanswered)} never answered")


def _anthropic_content(index: int, content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise TrajectoryError(index, "content must be a non-empty string or list of blocks")
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise TrajectoryError(index, f"invalid content block {block!r}")
        if block["type"] == "text":
            text = block.get("text")
            if not isinstance(text, str) or not text.strip():
                raise TrajectoryError(index, "text content blocks must contain non-whitespace text")
    return content


def _check_user_blocks(index: int, blocks: list[dict[str, Any]], unanswered: set[str]) -> None:
    answered: set[str] = set()
    seen_other = False
    for block in blocks:
        if block["type"] == "tool_use":
            raise TrajectoryError(index, "tool_use block in a user message")
        if block["type"] != "tool_result":
            seen_other = True
            continue
        use_id = block.get("tool_use_id")
        if seen_other:
            raise TrajectoryError(index, "tool_result blocks must come first in the user message")
        if use_id in answered:
            raise TrajectoryError(index, f"duplicate tool_result for {use_id!r}")
        if use_id not in unanswered:
            raise TrajectoryError(
                index, f"tool_result for {use_id!r} has no tool_use in the previous message"
            )
        answered.add(use_id)
    if unanswered - answered:
        raise TrajectoryError(
            index, f"tool_use {sorted(unanswered - answered)} not answered in the next message"
        )


def _check_assistant_blocks(index: int, blocks: list[dict[str, Any]], seen: set[str]) -> set[str]:
    uses: set[str] = set()
    for block in blocks:
        if block["type"] == "tool_result":
            raise TrajectoryError(index, "tool_result block in an assistant message")
        if block["type"] != "tool_use":
            continue
        use_id = block.get("id")
        if not isinstance(use_id, str) or not use_id:
            raise TrajectoryError(index, "tool_use block without an id")
        if use_id in seen:
            raise TrajectoryError(index, f"duplicate tool_use id {use_id!r}")
        if not isinstance(block.get("input"), dict):
            raise TrajectoryError(index, f"tool_use {use_id!r} input must be an object")
        seen.add(use_id)
        uses.add(use_id)
    return uses


def validate_both(messages: Sequence[Message], tools: Sequence[Any] | None = None) -> None:
    """Validate under OpenAI's rules, then convert and validate under Anthropic's."""
    validate_openai(messages, tools)
    system, converted = to_anthropic(messages)
    validate_anthropic(system, converted)
