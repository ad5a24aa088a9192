"""Model reasoning: collected from the stream, stored whole, replayed per provider.

SPEC §4 rule 1 records the assistant message with its reasoning. The
trajectory keeps it in one provider-neutral field on the assistant message::

    "reasoning": {"text": "...", "format": "reasoning_content",
                  "model": "deepseek-chat", "details": [...]}

``format`` is the wire field the text arrived in (``reasoning_content``:
vLLM, DeepSeek, llama.cpp; ``reasoning``: OpenRouter, Ollama); ``details``
are OpenRouter's ``reasoning_details`` items (reasoning text with
signatures, summaries, encrypted reasoning) exactly as streamed; ``model``
is the model that produced it — reasoning means something only to it.

That field never goes on the wire as it is: :func:`wire_messages` turns it
into what the endpoint accepts, or drops it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ReplayPolicy = Literal["auto", "always", "never"]
REASONING_KEY = "reasoning"  # the neutral field on a stored assistant message
_TEXT_FIELDS = ("reasoning_content", "reasoning")  # wire names of plain reasoning text
_DETAILS_FIELD = "reasoning_details"
_CONCATENATED = ("text", "summary", "data")  # detail fields streamed in fragments


@dataclass(frozen=True)
class Reasoning:
    text: str
    format: str  # the wire field the text came in; what it is replayed as
    model: str
    details: tuple[dict[str, Any], ...] = ()

    def as_field(self) -> dict[str, Any]:
        stored: dict[str, Any] = {"text": self.text, "format": self.format, "model": self.model}
        if self.details:
            stored["details"] = [dict(item) for item in self.details]
        return stored


@dataclass
class ReasoningCollector:
    """Folds the reasoning parts of stream deltas into one :class:`Reasoning`."""

    text: list[str] = field(default_factory=list)
    format: str = ""
    details: list[dict[str, Any]] = field(default_factory=list)

    def add(self, extra: Mapping[str, Any]) -> None:
        """Take a delta's non-standard fields (``delta.model_extra``)."""
        for key in _TEXT_FIELDS:
            value = extra.get(key)
            if isinstance(value, str) and value:
                self.format = self.format or key
                self.text.append(value)
                break  # OpenRouter-style servers may repeat the text under both names
        for item in extra.get(_DETAILS_FIELD) or []:
            if isinstance(item, dict):
                self._add_detail(item)

    def _add_detail(self, item: dict[str, Any]) -> None:
        # Streamed details are fragments of the item with the same index and type.
        last = self.details[-1] if self.details else None
        index, kind = item.get("index"), item.get("type")
        if last is None or index is None or last.get("index") != index:
            self.details.append(dict(item))
            return
        if kind is not None and last.get("type") not in (None, kind):
            self.details.append(dict(item))
            return
        for key, value in item.items():
            if key in _CONCATENATED and isinstance(value, str):
                last[key] = str(last.get(key) or "") + value
            elif value is not None:
                last[key] = value

    def result(self, model: str) -> Reasoning | None:
        if not self.text and not self.details:
            return None
        text = "".join(self.text)
        return Reasoning(text, self.format or _DETAILS_FIELD, model, tuple(self.details))


def wire_messages(
    messages: list[dict[str, Any]], policy: ReplayPolicy, model: str
) -> list[dict[str, Any]]:
    """The messages as the endpoint gets them: stored reasoning replayed or stripped.

    Messages without reasoning are passed on as the very same objects, so a
    trajectory without reasoning is sent byte for byte as before (prompt cache).
    """
    if not any(REASONING_KEY in message for message in messages):
        return messages
    return [_wire_message(message, policy, model) for message in messages]


def _wire_message(message: dict[str, Any], policy: ReplayPolicy, model: str) -> dict[str, Any]:
    stored = message.get(REASONING_KEY)
    if stored is None:
        return message
    sent = {key: value for key, value in message.items() if key != REASONING_KEY}
    if isinstance(stored, dict) and _replays(sent, stored, policy, model):
        sent.update(_replay_fields(stored))
    return sent


def _replays(
    message: dict[str, Any], stored: dict[str, Any], policy: ReplayPolicy, model: str
) -> bool:
    if policy == "never" or stored.get("format") == "anthropic":
        # Anthropic thinking blocks mean nothing to a chat-completions endpoint;
        # only the Anthropic provider replays them (wakeful/llm/anthropic_messages.py).
        return False
    if policy == "always":
        return True
    # auto: only with tool calls, and only to the model that produced it.
    # DeepSeek's thinking mode *requires* reasoning_content back on an assistant
    # message with tool calls, but *rejects* it on a plain chat turn; vanilla
    # OpenAI chat completions stream no reasoning, so nothing is ever replayed
    # to it — and if the configured model changes, the old model's reasoning
    # stays in the trajectory but is not sent to the new one. Replaying on every
    # tool-call message (not only the current turn's) keeps earlier messages'
    # bytes stable from request to request, so the prompt cache keeps hitting.
    return bool(message.get("tool_calls")) and stored.get("model") == model


def _replay_fields(stored: dict[str, Any]) -> dict[str, Any]:
    details = stored.get("details")
    if details:
        return {_DETAILS_FIELD: details}  # OpenRouter: replay the items whole (signatures)
    text = stored.get("text")
    wire_name = stored.get("format")
    if isinstance(text, str) and text and wire_name in _TEXT_FIELDS:
        return {str(wire_name): text}
    return {}
