"""The canonical trajectory as Anthropic's Messages API accepts it.

wakeful stores OpenAI chat-completions messages (wakeful/llm/base.py). The
Messages API has stricter rules, and these pure functions apply them
deliberately rather than hoping the trajectory happens to fit:

- the leading system messages become ``system``; a later system message is
  user text (moving it into ``system`` would change the cached prefix);
- the first message is from the user (a short note is put first if not);
- roles alternate: consecutive same-role turns are merged, each original
  message staying its own block, so nothing is joined or reworded;
- call ids are made of the characters the API allows (others become ``_``);
- tool results become ``tool_result`` blocks placed first in the user turn
  after the ``tool_use``; a ``tool_use`` with no result gets one saying so,
  and a result whose ``tool_use`` is not in the previous turn becomes text;
- thinking blocks, stored in the neutral reasoning field (reasoning.py) with
  ``format`` "anthropic", are replayed unchanged, signatures and all, but only
  to the model that produced them;
- ``cache_control`` breakpoints (the API allows four) go on the last tool, the
  system block and the last block of each of the last two user turns, so the
  tools, the system prompt and the trajectory up to the previous turn are
  read from the cache on the next call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wakeful.llm.reasoning import REASONING_KEY

ANTHROPIC_FORMAT = "anthropic"  # the reasoning field's format for thinking blocks
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
MAX_BREAKPOINTS = 4  # the API rejects more cache_control blocks than this
EPHEMERAL = {"type": "ephemeral"}
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")  # tool_use ids must match ^[a-zA-Z0-9_-]+$
CONVERSATION_START = "[The conversation so far begins here.]"
NO_RESULT = "[No result was recorded for this tool call.]"

Block = dict[str, Any]
Turn = dict[str, Any]


@dataclass(frozen=True)
class MessagesBody:
    """The parts of a Messages API request that come from the trajectory."""

    system: list[Block]
    messages: list[Turn]
    tools: list[dict[str, Any]]


def to_messages_body(
    messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], model: str
) -> MessagesBody:
    """The request parts for ``model``, with cache breakpoints placed."""
    system_texts, rest = _split_system(messages)
    turns = _alternate(_answer_tool_uses([_turn(m, model) for m in rest]))
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [_text(CONVERSATION_START)]})
    system = [_text(text) for text in system_texts if text.strip()]
    converted_tools = [tool_definition(tool) for tool in tools]
    _place_breakpoints(system, turns, converted_tools)
    return MessagesBody(system=system, messages=turns, tools=converted_tools)


def tool_definition(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``{"type": "function", "function": {...}}`` tool as Anthropic's."""
    function = tool.get("function") or {}
    definition: dict[str, Any] = {
        "name": function.get("name", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        definition["description"] = function["description"]
    return definition


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's JSON text as the object ``tool_use.input`` must be."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    # The model sent arguments that are not an object; the loop already told it
    # so in the tool result. Keep its text so the turn still says what it sent.
    return {"unparsed_arguments": arguments}


def tool_use_id(call_id: str) -> str:
    """A stored call id as the API accepts it (same result for the call and its result).

    Calls made through other endpoints may have ids like ``functions.get_time:0``.
    """
    return _ID_UNSAFE.sub("_", call_id) or "call"


def count_breakpoints(body: dict[str, Any]) -> int:
    """How many ``cache_control`` markers a request body carries (the API allows 4)."""
    count = 0
    for part in (body.get("tools") or [], body.get("system") or []):
        if isinstance(part, list):
            count += sum(1 for item in part if isinstance(item, dict) and "cache_control" in item)
    for turn in body.get("messages") or []:
        content = turn.get("content")
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, dict) and "cache_control" in b)
    return count


# --- conversion -------------------------------------------------------------


def _split_system(messages: Sequence[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    leading: list[str] = []
    position = 0
    while position < len(messages) and messages[position].get("role") in ("system", "developer"):
        leading.append(_plain_text(messages[position].get("content")))
        position += 1
    return leading, list(messages[position:])


def _turn(message: dict[str, Any], model: str) -> Turn:
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        return {"role": "assistant", "content": _assistant_blocks(message, model)}
    if role == "tool":
        result: Block = {
            "type": "tool_result",
            "tool_use_id": tool_use_id(str(message.get("tool_call_id") or "")),
            "content": _plain_text(content) or "(empty result)",
        }
        return {"role": "user", "content": [result]}
    text = _plain_text(content)
    if role in ("system", "developer"):
        text = f"[system] {text}"
    return {"role": "user", "content": [_text(text)] if text.strip() else []}


def _assistant_blocks(message: dict[str, Any], model: str) -> list[Block]:
    blocks = list(_thinking_blocks(message.get(REASONING_KEY), model))
    text = _plain_text(message.get("content"))
    if text.strip():
        blocks.append(_text(text))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_use_id(str(call.get("id") or "")),
                "name": str(function.get("name") or ""),
                "input": tool_input(str(function.get("arguments") or "")),
            }
        )
    return blocks


def _thinking_blocks(stored: Any, model: str) -> list[Block]:
    """Stored thinking blocks, unchanged, if they are Anthropic's and this model's."""
    if not isinstance(stored, dict) or stored.get("format") != ANTHROPIC_FORMAT:
        return []
    if stored.get("model") != model:
        return []  # a signature means something only to the model that made it
    details = stored.get("details") or []
    return [dict(d) for d in details if isinstance(d, dict) and d.get("type") in THINKING_TYPES]


def _answer_tool_uses(turns: list[Turn]) -> list[Turn]:
    """Every tool_use answered in the next user turn; every tool_result after its tool_use.

    Works on the unmerged turns: a tool turn belongs to the assistant turn
    before it if that (or a tool turn in between) made the call.
    """
    fixed: list[Turn] = []
    open_ids: list[str] = []  # tool_use ids of the last assistant turn not yet answered
    for turn in turns:
        if turn["role"] == "assistant":
            _close(fixed, open_ids)
            open_ids = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
            fixed.append(turn)
            continue
        blocks: list[Block] = []
        for block in turn["content"]:
            if block["type"] == "tool_result" and block["tool_use_id"] in open_ids:
                open_ids.remove(block["tool_use_id"])
                blocks.append(block)
            elif block["type"] == "tool_result":
                orphan = f"[Result of tool call {block['tool_use_id']}] {block['content']}"
                blocks.append(_text(orphan))
            else:
                blocks.append(block)
        fixed.append({"role": "user", "content": blocks})
    _close(fixed, open_ids)
    return fixed


def _close(turns: list[Turn], open_ids: list[str]) -> None:
    # A call without a result (it should not happen: the trajectory writer
    # answers every call) would be rejected by the API; say so instead.
    if open_ids:
        results = [
            {"type": "tool_result", "tool_use_id": use_id, "content": NO_RESULT, "is_error": True}
            for use_id in open_ids
        ]
        turns.append({"role": "user", "content": results})
        open_ids.clear()


def _alternate(turns: list[Turn]) -> list[Turn]:
    """Consecutive same-role turns merged; in a user turn, tool results first."""
    merged: list[Turn] = []
    for turn in turns:
        if not turn["content"]:
            continue  # an empty message (no text, no call) is no turn at all
        if merged and merged[-1]["role"] == turn["role"]:
            merged[-1]["content"].extend(turn["content"])
        else:
            merged.append({"role": turn["role"], "content": list(turn["content"])})
    for turn in merged:
        if turn["role"] == "user":
            # A note that arrived between a call and its result (the loop does not
            # write this, but a merge can produce it) must follow the results.
            blocks = turn["content"]
            turn["content"] = [b for b in blocks if b["type"] == "tool_result"] + [
                b for b in blocks if b["type"] != "tool_result"
            ]
    return merged


def _place_breakpoints(system: list[Block], turns: list[Turn], tools: list[dict[str, Any]]) -> None:
    """Mark the ends of the stable prefixes; the blocks are fresh copies, safe to change."""
    marked = 0
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
        marked += 1
    if system:
        system[-1] = {**system[-1], "cache_control": dict(EPHEMERAL)}
        marked += 1
    # The current turn's end is written to the cache; the previous turn's end
    # is read from it (the rolling pair: each call reads what the last wrote).
    user_turns = [turn for turn in turns if turn["role"] == "user"]
    for turn in reversed(user_turns[-2:]):
        if marked >= MAX_BREAKPOINTS:
            break
        turn["content"][-1] = {**turn["content"][-1], "cache_control": dict(EPHEMERAL)}
        marked += 1


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _plain_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)
