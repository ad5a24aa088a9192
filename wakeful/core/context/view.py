"""What of the stored trajectory the model is sent: a boundary, a summary, stubs.

A :class:`ContextView` is small and kept in the store beside the trajectory
(``context:<session>``): the index before which everything is replaced by a
summary, and the tool results after it that were pruned to stubs. Applying it
to the full stored history gives the request's messages; the history itself
is never rewritten.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, Any]

SUMMARY_MARK = "[Summary of the earlier conversation"


@dataclass
class ContextView:
    start: int = 0  # messages before this index are represented by ``summary``
    summary: str | None = None
    summarized_at: str | None = None
    stubs: dict[int, str] = field(default_factory=dict)  # message index -> stub text
    compactions: int = 0
    prunes: int = 0
    last_problem: str | None = None  # why the context could not be made to fit, if so
    failed_compactions: int = 0  # in a row; see breaker.py
    breaker_opened_at: float | None = None  # epoch seconds the compaction breaker opened

    def apply(self, full: list[Message]) -> list[Message]:
        shown: list[Message] = []
        if self.summary:
            shown.append(summary_message(self))
        for index in range(self.start, len(full)):
            message = full[index]
            stub = self.stubs.get(index)
            shown.append(message if stub is None else {**message, "content": stub})
        return shown

    def to_json(self) -> str:
        data = asdict(self)
        data["stubs"] = {str(k): v for k, v in self.stubs.items()}
        return json.dumps(data)

    @classmethod
    def from_json(cls, raw: str) -> ContextView:
        data = json.loads(raw)
        data["stubs"] = {int(k): v for k, v in data.get("stubs", {}).items()}
        return cls(**data)

    def describe(self) -> dict[str, Any]:
        return {
            "compacted_before": self.start,
            "compactions": self.compactions,
            "prunes": self.prunes,
            "pruned_results": len(self.stubs),
            "last_problem": self.last_problem,
            "failed_compactions": self.failed_compactions,
        }


def summary_message(view: ContextView) -> Message:
    return {
        "role": "user",
        "content": (
            f"{SUMMARY_MARK} (compaction {view.compactions}, of everything before "
            f"{view.summarized_at}), written when the context filled up. The daemon keeps the "
            f"full history; this summary stands in for it.]\n{view.summary}"
        ),
    }


def tool_names(full: list[Message]) -> dict[str, str]:
    """call id -> tool name, from the assistant messages' tool calls."""
    names: dict[str, str] = {}
    for message in full:
        for call in message.get("tool_calls") or []:
            names[str(call.get("id"))] = str(call.get("function", {}).get("name", "a tool"))
    return names


def safe_boundaries(full: list[Message], start: int) -> list[int]:
    """Indexes of user messages where a boundary splits no tool call from its
    result (every call before the index is answered before it)."""
    found: list[int] = []
    open_calls: set[str] = set()
    for index, message in enumerate(full):
        role = message.get("role")
        if role == "assistant":
            open_calls |= {str(c.get("id")) for c in message.get("tool_calls") or []}
        elif role == "tool":
            open_calls.discard(str(message.get("tool_call_id")))
        elif role == "user" and index > start and not open_calls:
            found.append(index)
    return found


def carried_until(full: list[Message]) -> int:
    """The index before which every message was carried verbatim by an agent request
    that the model answered, or is the model's own answer: just past the newest
    assistant message (it answered a request holding all before it). Nothing at or
    after it may pass behind a boundary: the model has not read it yet (0 when it has
    answered nothing)."""
    for index in range(len(full) - 1, -1, -1):
        if full[index].get("role") == "assistant":
            return index + 1
    return 0
