"""A provider for Anthropic's Messages API, on the official ``anthropic`` SDK.

The trajectory is converted by wakeful/llm/anthropic_messages.py; this module
streams one reply and folds its events (text, tool_use input fragments,
thinking and its signature) into a :class:`ModelResponse`; the call itself
(a shielded hang-up, so a cancelled caller stops the API at once, SPEC §4
rule 4, and the errors translated) is wakeful/llm/streaming_call.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic import AsyncStream
from anthropic.types import Message as AnthropicMessage
from anthropic.types import RawMessageStreamEvent

from wakeful.core.provider import DeltaCallback, ModelRequest, ModelResponse, ToolCall, Usage
from wakeful.core.reasoning import Reasoning
from wakeful.llm.anthropic_messages import ANTHROPIC_FORMAT, MessagesConverter
from wakeful.llm.config import LlmSection
from wakeful.llm.error_mapping import (
    EndpointErrors,
    ErrorDialect,
    Refusal,
    SdkErrors,
    redact_url,
)
from wakeful.llm.model_key import key_source
from wakeful.llm.request_encoding import SessionEncoders
from wakeful.llm.session_cache import SessionCache
from wakeful.llm.streaming_call import stream_reply

DEFAULT_BASE_URL = "https://api.anthropic.com"
_MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens
# Anthropic's stop reasons as the loop knows them (OpenAI's finish_reason values).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_OVERLOADED = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def _read_refusal(exc: anthropic.APIStatusError) -> Refusal:
    message = _error_message(exc)
    kind = _error_type(exc.body)
    return Refusal(
        exc.status_code,
        message,
        too_long="prompt is too long" in message.lower(),
        overloaded=kind in _OVERLOADED,
        error_type=kind,
    )


_ERRORS = ErrorDialect(
    sdk=SdkErrors.of(anthropic),
    read_refusal=_read_refusal,
    reach_hint="Is it reachable? Check [llm] base_url.",
    overloaded_hint="The API is overloaded or failing; try again later.",
    too_long=(
        "the conversation is longer than the context window of [llm] model {model!r}: {message}"
    ),
    not_found_hint="Check [llm] model and [llm] base_url.",
    expected_api="Anthropic's API",
    names_error_type=True,
)


@dataclass
class _Block:
    """One content block as it streams in."""

    type: str
    parts: list[str] = field(default_factory=list)  # text, thinking, or input JSON
    id: str = ""
    name: str = ""
    signature: str = ""
    data: str = ""  # redacted_thinking's opaque payload


@dataclass
class _Accumulator:
    """Folds stream events into one reply."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    stop_reason: str | None = None
    model: str = ""
    input_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    output_tokens: int = 0

    def add(self, event: RawMessageStreamEvent) -> str:
        """Take one event; return the reply text it adds (may be empty)."""
        if event.type == "message_start":
            self.model = event.message.model or self.model
            usage = event.message.usage
            self._usage(
                usage.input_tokens,
                usage.cache_read_input_tokens,
                usage.cache_creation_input_tokens,
                usage.output_tokens,
            )
        elif event.type == "content_block_start":
            block = event.content_block
            started = _Block(type=block.type)
            if block.type == "text":
                started.parts.append(block.text)
            elif block.type == "tool_use":
                started.id, started.name = block.id, block.name
            elif block.type == "thinking":
                started.parts.append(block.thinking)
                started.signature = block.signature or ""
            elif block.type == "redacted_thinking":
                started.data = block.data
            self.blocks[event.index] = started
            return block.text if block.type == "text" else ""
        elif event.type == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            totals = event.usage
            self._usage(
                totals.input_tokens,
                totals.cache_read_input_tokens,
                totals.cache_creation_input_tokens,
                totals.output_tokens,
            )
        return ""

    def _usage(
        self, given: int | None, read: int | None, created: int | None, output: int | None
    ) -> None:
        # message_delta's counts are cumulative: a later value replaces an earlier one.
        self.input_tokens = given if given is not None else self.input_tokens
        self.cache_read = read if read is not None else self.cache_read
        self.cache_creation = created if created is not None else self.cache_creation
        self.output_tokens = output if output is not None else self.output_tokens

    def _delta(self, index: int, delta: Any) -> str:
        block = self.blocks.setdefault(index, _Block(type="text"))
        if delta.type == "text_delta":
            block.parts.append(delta.text)
            return str(delta.text)
        if delta.type == "input_json_delta":
            block.parts.append(delta.partial_json)
        elif delta.type == "thinking_delta":
            block.parts.append(delta.thinking)
        elif delta.type == "signature_delta":
            block.signature += delta.signature
        return ""

    def response(self, requested_model: str, latency_s: float) -> ModelResponse:
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
        calls = tuple(
            ToolCall(id=b.id, name=b.name, arguments="".join(b.parts) or "{}")
            for b in ordered
            if b.type == "tool_use"
        )
        text = "".join("".join(b.parts) for b in ordered if b.type == "text")
        reason = self.stop_reason
        return ModelResponse(
            content=text,
            tool_calls=calls,
            finish_reason=_FINISH.get(reason, reason) if reason else None,
            usage=Usage(
                # Anthropic counts cached input apart; our prompt_tokens is all of it.
                prompt_tokens=self.input_tokens + self.cache_read + self.cache_creation,
                completion_tokens=self.output_tokens,
                cached_tokens=self.cache_read,
            ),
            model=self.model or requested_model,
            latency_s=latency_s,
            reasoning=self._reasoning(ordered, requested_model),
        )

    @staticmethod
    def _reasoning(ordered: list[_Block], model: str) -> Reasoning | None:
        details: list[dict[str, Any]] = []
        for block in ordered:
            if block.type == "thinking":
                thinking = "".join(block.parts)
                signature = block.signature
                details.append({"type": "thinking", "thinking": thinking, "signature": signature})
            elif block.type == "redacted_thinking":
                details.append({"type": "redacted_thinking", "data": block.data})
        if not details:
            return None
        text = "".join(str(d.get("thinking", "")) for d in details)
        # Tagged with the model we asked for: replay compares it with the next request's.
        return Reasoning(text, ANTHROPIC_FORMAT, model, tuple(details))


class AnthropicProvider:
    """`ModelProvider` on the `anthropic` SDK's `AsyncAnthropic`, always streaming."""

    def __init__(
        self,
        api_key: str | None,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        max_output_tokens: int = 8192,
        thinking_budget_tokens: int = 0,
        timeout_s: float = 300.0,
        max_retries: int = 2,
        key_source: str = "[llm] api_key_env or [llm] api_key_file",
        read_timeout_s: float = 60.0,
    ) -> None:
        self._model = model
        self._safe_url = redact_url(base_url)
        self._errors = EndpointErrors(
            _ERRORS,
            url=self._safe_url,
            model=model,
            max_retries=max_retries,
            key_source=key_source,
            read_timeout_s=read_timeout_s,
        )
        self._deadline_s = timeout_s  # the whole call's (streaming_call.py)
        self._max_output_tokens = max_output_tokens
        self._thinking_budget = thinking_budget_tokens
        self._encoders = SessionEncoders()
        self._converters = SessionCache(MessagesConverter)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or "no-key-configured",
            base_url=base_url,
            # Per read (connect, each chunk): the longest silence; the whole call's
            # deadline is stream_reply's, as a model that keeps talking resets this one.
            timeout=read_timeout_s,
            max_retries=max_retries,
        )

    @property
    def configured(self) -> bool:
        return True

    def describe(self) -> str:
        thinking = f", thinking {self._thinking_budget} tokens" if self._thinking_budget else ""
        return f"anthropic model {self._model!r} at {self._safe_url}{thinking}"

    async def complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        model = request.model or self._model
        return await stream_reply(
            lambda: self._open(request),
            _Accumulator(),
            model,
            on_delta,
            self._errors,
            self._deadline_s,
        )

    async def _open(self, request: ModelRequest) -> AsyncStream[RawMessageStreamEvent]:
        # Posted as plain JSON (no per-field SDK transform), as the OpenAI provider does:
        # the bytes are exactly what wire_body shows, only the new tail encoded.
        return await self._client.post(
            "/v1/messages",
            content=self._encoders.encode(request.session, self.wire_body(request)),
            cast_to=AnthropicMessage,
            stream=True,
            stream_cls=AsyncStream[RawMessageStreamEvent],
        )

    def wire_body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body posted to /v1/messages for this request."""
        model = request.model or self._model
        # A session's turns are converted once, the new tail each call; a
        # one-off call's all at once.
        session = request.session
        converter = self._converters.get(session) if session else MessagesConverter()
        converted = converter.convert(request.messages, request.tools, model)
        max_tokens = request.max_tokens or self._max_output_tokens
        body: dict[str, object] = {"model": model, "max_tokens": max_tokens, "stream": True}
        if converted.system:
            body["system"] = converted.system
        body["messages"] = converted.messages
        if converted.tools:
            body["tools"] = converted.tools
        if self._thinking_budget and _may_think(converted.messages):
            # The budget must be below max_tokens; a small side call (max_tokens
            # given by the caller) thinks with what is left, or not at all.
            budget = min(self._thinking_budget, max_tokens - 1)
            if budget >= _MIN_THINKING_BUDGET:
                body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def aclose(self) -> None:
        await self._client.close()


def _may_think(messages: list[dict[str, Any]]) -> bool:
    """Whether thinking may be on for a request ending in these turns.

    The API refuses thinking in a tool-use loop whose last assistant turn does
    not start with its thinking block; that happens when the turn came from
    another model (its thinking is not replayed) or thinking was just turned
    on. That one request goes without thinking; the next turn thinks again.
    """
    if len(messages) < 2 or messages[-2]["role"] != "assistant":
        return True
    if not any(block["type"] == "tool_result" for block in messages[-1]["content"]):
        return True
    first = messages[-2]["content"][0]["type"]
    return first in ("thinking", "redacted_thinking")


def _error_type(body: object) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else ""


def _error_message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else exc.message


def from_config(llm: LlmSection, api_key: str | None) -> AnthropicProvider:
    """The provider ``[llm] provider = "anthropic"`` names (wakeful/llm/registry.py);
    the SDK's presence was checked with the config (LlmSection)."""
    return AnthropicProvider(
        api_key=api_key,
        model=llm.model,
        base_url=llm.base_url,
        max_output_tokens=llm.max_output_tokens,
        thinking_budget_tokens=llm.thinking_budget_tokens,
        timeout_s=llm.timeout_s,
        read_timeout_s=llm.read_timeout_s,
        max_retries=llm.max_retries,
        key_source=key_source(llm),
    )
