"""The canonical trajectory as Anthropic's Messages API accepts it.

wakeful stores OpenAI chat-completions messages (wakeful/core/provider.py). The
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

A session's request is its previous one plus a short tail, so a
:class:`MessagesConverter` (one per session, kept by the provider) converts
only the messages after the prefix it shares with the last call's (the same
objects, or equal: the trajectory is append-only and never changed in place,
as wakeful/llm/request_encoding.py relies on too). That holds because the
conversion is a left fold: each message's turn is appended to, or merged
into, the turns so far. Turns are converted once, then frozen: a turn that
is no longer the last is never changed again and is handed out, the same
object, to every later call (which also lets the encoder reuse it by
identity); the last turn, which a same-role message may still grow, and the
turns that carry a breakpoint are fresh copies in each call. Nothing in a
returned body is changed by a later call, and nothing returned may be
changed by its receiver.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wakeful.core.reasoning import REASONING_KEY
from wakeful.llm.request_encoding import shared_prefix

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
    """The request parts for ``model``, with cache breakpoints placed (all converted anew)."""
    return MessagesConverter().convert(messages, tools, model)


class MessagesConverter:
    """One session's conversions, each reusing the turns of the prefix it shares with the last."""

    def __init__(self) -> None:
        self._model: str | None = None
        self._fold = _TurnFold()
        self.converted = 0  # messages the last call converted (the others were reused)

    def convert(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], model: str
    ) -> MessagesBody:
        """What :func:`to_messages_body` returns, converting only the new tail."""
        system_texts, rest = _split_system(messages)
        if model != self._model:  # thinking blocks are replayed to their own model only
            self._model, self._fold = model, _TurnFold()
        self.converted = self._fold.update(rest, model)
        turns = self._fold.turns()
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


@dataclass(frozen=True)
class _Mark:
    """How far the fold reached after one message: what undoing the messages after it keeps."""

    turns: int
    last_blocks: int  # blocks of the then last turn (it may have grown since)
    open_ids: tuple[str, ...]


class _TurnFold:
    """The merged turns of a run of messages, extended one message at a time.

    Applies the rules in order: every tool_use answered in the next user turn
    (a call without a result gets one saying so), every tool_result after its
    tool_use (else it becomes text), consecutive same-role turns merged, and
    in a user turn the tool results first. A turn is sealed, its output form
    made once, when a turn of the other role follows it.
    """

    def __init__(self) -> None:
        self._inputs: list[dict[str, Any]] = []  # the messages folded in (kept to compare)
        self._marks: list[_Mark] = []  # after each of them
        self._turns: list[Turn] = []  # merged, blocks in arrival order; only the last grows
        self._sealed: list[Turn] = []  # the output form of every turn but the last: frozen
        self._open: list[str] = []  # tool_use ids of the last assistant turn not yet answered

    def update(self, messages: list[dict[str, Any]], model: str) -> int:
        """Fold in ``messages`` after undoing what differs from the last; how many were new."""
        kept = shared_prefix(messages, self._inputs)
        if kept < len(self._inputs):
            self._rewind(kept)
        for message in messages[kept:]:
            self._add(_turn(message, model))
            self._inputs.append(message)
            last_blocks = len(self._turns[-1]["content"]) if self._turns else 0
            self._marks.append(_Mark(len(self._turns), last_blocks, tuple(self._open)))
        return len(messages) - kept

    def turns(self) -> list[Turn]:
        """The output turns: a new list, its sealed turns shared, its last ones fresh."""
        if not self._turns:
            return []
        last = self._turns[-1]
        tail = [last]
        # A call still unanswered at the end (it should not happen: the trajectory
        # writer answers every call) would be rejected by the API; say so instead.
        results = _unanswered(self._open)
        if results and last["role"] == "user":
            tail = [{"role": "user", "content": [*last["content"], *results]}]
        elif results:
            tail.append({"role": "user", "content": results})
        return [*self._sealed, *(_output(turn) for turn in tail)]

    def _rewind(self, kept: int) -> None:
        mark = self._marks[kept - 1] if kept else _Mark(0, 0, ())
        del self._inputs[kept:], self._marks[kept:]
        del self._turns[mark.turns :]
        if self._turns:
            del self._turns[-1]["content"][mark.last_blocks :]
        del self._sealed[max(mark.turns - 1, 0) :]  # the then last turn is not sealed
        self._open = list(mark.open_ids)

    def _add(self, turn: Turn) -> None:
        if turn["role"] == "assistant":
            self._merge("user", _unanswered(self._open))
            self._open = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
            self._merge("assistant", turn["content"])
        else:
            self._merge("user", [self._answer(block) for block in turn["content"]])

    def _answer(self, block: Block) -> Block:
        if block["type"] != "tool_result":
            return block
        if block["tool_use_id"] in self._open:
            self._open.remove(block["tool_use_id"])
            return block
        return _text(f"[Result of tool call {block['tool_use_id']}] {block['content']}")

    def _merge(self, role: str, blocks: list[Block]) -> None:
        if not blocks:
            return  # an empty message (no text, no call) is no turn at all
        if self._turns and self._turns[-1]["role"] == role:
            self._turns[-1]["content"].extend(blocks)
            return
        if self._turns:
            self._sealed.append(_output(self._turns[-1]))
        self._turns.append({"role": role, "content": list(blocks)})


def _unanswered(open_ids: list[str]) -> list[Block]:
    return [
        {"type": "tool_result", "tool_use_id": use_id, "content": NO_RESULT, "is_error": True}
        for use_id in open_ids
    ]


def _output(turn: Turn) -> Turn:
    """A merged turn as sent: a copy, and in a user turn the tool results first."""
    blocks = turn["content"]
    if turn["role"] != "user":
        return {"role": turn["role"], "content": list(blocks)}
    # A note that arrived between a call and its result (the loop does not
    # write this, but a merge can produce it) must follow the results.
    results = [b for b in blocks if b["type"] == "tool_result"]
    return {"role": "user", "content": results + [b for b in blocks if b["type"] != "tool_result"]}


def _place_breakpoints(system: list[Block], turns: list[Turn], tools: list[dict[str, Any]]) -> None:
    """Mark the ends of the stable prefixes, on copies: a turn may be frozen (shared)."""
    marked = 0
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
        marked += 1
    if system:
        system[-1] = {**system[-1], "cache_control": dict(EPHEMERAL)}
        marked += 1
    # The current turn's end is written to the cache; the previous turn's end
    # is read from it (the rolling pair: each call reads what the last wrote).
    # Roles alternate, so the last two user turns are among the last few.
    user_turns = 0
    for index in range(len(turns) - 1, -1, -1):
        if marked >= MAX_BREAKPOINTS or user_turns == 2:
            break
        turn = turns[index]
        if turn["role"] != "user":
            continue
        *before, end = turn["content"]
        turns[index] = {**turn, "content": [*before, {**end, "cache_control": dict(EPHEMERAL)}]}
        marked += 1
        user_turns += 1


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
