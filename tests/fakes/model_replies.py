"""Scripted replies of the fake model server and their wire format.

The chunks mirror what api.openai.com streams for `chat.completion.chunk`:
a role chunk, one chunk per text token, tool calls opened with index, id,
type, name and empty arguments and then filled by argument fragments, a
finish chunk, an optional usage chunk with no choices, then `[DONE]`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(r"\s*\S+|\s+")
_ARGUMENT_FRAGMENT = 6  # characters per streamed argument fragment, like real models
_ids = itertools.count(1)


def tokenize(text: str) -> list[str]:
    """Split text into word tokens that keep their leading whitespace."""
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # None: generated as "call_<n>"

    def arguments_text(self) -> str:
        """A string is sent verbatim (so tests can send odd or invalid JSON)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    reasoning: str = ""  # streamed first as `reasoning_content`, like vLLM and DeepSeek
    reasoning_field: str = "reasoning_content"  # or "reasoning", like OpenRouter and Ollama
    # OpenRouter's `reasoning_details` items, each streamed in two fragments
    # (its text, then the rest: signature, encrypted data, …) under one index.
    reasoning_details: Sequence[dict[str, Any]] = ()
    tool_calls: Sequence[ToolCallSpec] = ()
    token_delay_s: float = 0.0
    first_token_delay_s: float = 0.0
    hang: bool = False  # stream every scripted chunk, then wait for the client to leave
    # Stream every scripted chunk, then one more word every token_delay_s until the
    # client leaves: a model that never stops talking.
    endless: bool = False
    status: int = 200
    error_message: str = "scripted error"
    retry_after_s: float | None = None  # sent as retry-after-ms so SDK retries are fast
    finish_reason: str | None = None  # None: "tool_calls" if there are calls, else "stop"
    prompt_tokens: int | None = None  # None: estimated from the request
    completion_tokens: int | None = None  # None: the number of streamed tokens
    cached_tokens: int | None = None  # set: sent as prompt_tokens_details.cached_tokens
    # After the text chunks, one event the client cannot decode, then the stream ends:
    # "utf8": bytes that are not UTF-8; "json": a data line that is not JSON.
    corrupt: str = ""


def text_reply(text: str = "ok") -> Reply:
    return Reply(text=text)


def load_script(path: str) -> list[Reply]:
    """A JSON list of Reply fields; tool_calls are lists of ToolCallSpec fields."""
    with open(path, encoding="utf-8") as handle:
        return replies_from_json(json.load(handle))


def replies_from_json(items: list[dict[str, Any]]) -> list[Reply]:
    """Replies from decoded JSON in the `--script` format (also the control API's)."""
    replies = []
    for item in items:
        fields = dict(item)
        calls = tuple(ToolCallSpec(**call) for call in fields.pop("tool_calls", []))
        replies.append(Reply(**fields, tool_calls=calls))
    return replies


def reply_to_json(reply: Reply) -> dict[str, Any]:
    """The `--script` form of one reply, so it can be sent to another process."""
    fields = dataclasses.asdict(reply)
    fields["tool_calls"] = [dataclasses.asdict(call) for call in reply.tool_calls]
    return fields


@dataclass(frozen=True)
class ResolvedCall:
    index: int
    id: str
    name: str
    arguments: str


class ReplyRenderer:
    """Turns one Reply into the chunks (or the body) of one response."""

    def __init__(self, reply: Reply, request: dict[str, Any]) -> None:
        self.reply = reply
        self.model = str(request.get("model") or "fake-model")
        self.completion_id = f"chatcmpl-fake{next(_ids)}"
        self.created = int(time.time())
        self.calls = [
            ResolvedCall(i, spec.id or f"call_{next(_ids)}", spec.name, spec.arguments_text())
            for i, spec in enumerate(reply.tool_calls)
        ]
        # Messages and tools, as a real endpoint counts the prompt (tools are part of it).
        text = json.dumps(request.get("messages", [])) + json.dumps(request.get("tools", []))
        self._prompt_estimate = max(1, len(text) // 4)
        options = request.get("stream_options") or {}
        self.include_usage = bool(options.get("include_usage"))

    @property
    def finish_reason(self) -> str:
        if self.reply.finish_reason is not None:
            return self.reply.finish_reason
        return "tool_calls" if self.calls else "stop"

    def word_chunk(self, word: str) -> dict[str, Any]:
        """One more text token (Reply.endless streams these until the client leaves)."""
        return self._chunk({"content": word})

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        chunk: dict[str, Any] = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": [choice],
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def content_chunks(self) -> Iterator[dict[str, Any]]:
        """Role chunk, text tokens and tool-call fragments: everything before the finish."""
        yield self._chunk({"role": "assistant", "content": "", "refusal": None})
        for token in tokenize(self.reply.reasoning):
            yield self._chunk({self.reply.reasoning_field: token})
        for index, detail in enumerate(self.reply.reasoning_details):
            head = {k: v for k, v in detail.items() if k in ("type", "text")}
            tail = {k: v for k, v in detail.items() if k not in ("type", "text")}
            for part in (head, tail):
                yield self._chunk({"reasoning_details": [{**part, "index": index}]})
        for token in tokenize(self.reply.text):
            yield self._chunk({"content": token})
        for call in self.calls:
            opening = {
                "index": call.index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            yield self._chunk({"tool_calls": [opening]})
            for start in range(0, len(call.arguments), _ARGUMENT_FRAGMENT):
                fragment = call.arguments[start : start + _ARGUMENT_FRAGMENT]
                part = {"index": call.index, "function": {"arguments": fragment}}
                yield self._chunk({"tool_calls": [part]})

    def final_chunks(self) -> Iterator[dict[str, Any]]:
        yield self._chunk({}, self.finish_reason)
        if self.include_usage:
            usage_chunk = self._chunk({})
            usage_chunk["choices"] = []
            usage_chunk["usage"] = self.usage()
            yield usage_chunk

    def usage(self) -> dict[str, Any]:
        completion = self.reply.completion_tokens
        if completion is None:
            completion = len(tokenize(self.reply.text)) + sum(
                1 + len(call.arguments) // _ARGUMENT_FRAGMENT for call in self.calls
            )
        prompt = self.reply.prompt_tokens or self._prompt_estimate
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if self.reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.reply.cached_tokens}
        return usage

    def completion_body(self) -> dict[str, Any]:
        """The non-streaming `chat.completion` object."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.reply.text or None,
            "refusal": None,
        }
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.calls
            ]
        choice = {"index": 0, "message": message, "logprobs": None}
        choice["finish_reason"] = self.finish_reason
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": [choice],
            "usage": self.usage(),
        }

    def error_body(self) -> dict[str, Any]:
        kind = "rate_limit_exceeded" if self.reply.status == 429 else "server_error"
        if self.reply.status in (401, 403):
            kind = "invalid_api_key"
        return {
            "error": {
                "message": self.reply.error_message,
                "type": kind,
                "param": None,
                "code": kind,
            }
        }
