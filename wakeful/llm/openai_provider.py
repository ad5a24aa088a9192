"""A provider for any OpenAI-compatible chat-completions endpoint.

Streams through the official SDK (wakeful/llm/streaming_call.py: the
response is closed in a shielded `finally`, so when the caller cancels
mid-stream the server sees the disconnect at once and stops generating,
SPEC §4 rule 4). This module keeps what is OpenAI's: the request body, how
the stream's chunks add up, and how its errors read.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from openai.types.completion_usage import CompletionUsage

from wakeful.core.provider import DeltaCallback, ModelRequest, ModelResponse, ToolCall, Usage
from wakeful.core.reasoning import ReasoningCollector, ReplayPolicy, wire_messages
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
from wakeful.llm.streaming_call import stream_reply

# Local servers (llama.cpp, LM Studio, vLLM, Ollama) need no key, but the SDK
# refuses to start without one.
_DUMMY_KEY = "not-needed"


def _read_refusal(exc: openai.APIStatusError) -> Refusal:
    return Refusal(exc.status_code, exc.message, too_long=_is_context_too_long(exc))


_ERRORS = ErrorDialect(
    sdk=SdkErrors.of(openai),
    read_refusal=_read_refusal,
    reach_hint="Is the server at {url} running? Check [llm] base_url.",
    overloaded_hint="The server is overloaded or failing; check it, or [llm] base_url.",
    too_long="the model endpoint {url} said the request is too long: {message}",
    not_found_hint="Check [llm] model and [llm] base_url (usually ending in /v1).",
    expected_api="an OpenAI-compatible endpoint",
)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def build(self) -> ToolCall:
        # Some local servers omit the id; the trajectory still needs a unique one.
        call_id = self.id or f"call_{uuid.uuid4().hex[:24]}"
        return ToolCall(id=call_id, name=self.name, arguments="".join(self.arguments))


@dataclass
class _Accumulator:
    """Folds stream chunks into one completion."""

    text: list[str] = field(default_factory=list)
    reasoning: ReasoningCollector = field(default_factory=ReasoningCollector)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; return the text it adds (may be empty)."""
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        added = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue  # we never ask for n > 1
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
            added += self._add_delta(choice.delta)
        return added

    def _add_delta(self, delta: ChoiceDelta) -> str:
        if delta.model_extra:
            self.reasoning.add(delta.model_extra)
        for part in delta.tool_calls or []:
            call = self.calls.setdefault(part.index, _PartialCall())
            call.id = part.id or call.id
            if part.function is not None:
                call.name = part.function.name or call.name
                if part.function.arguments:
                    call.arguments.append(part.function.arguments)
        if delta.content:
            self.text.append(delta.content)
            return delta.content
        return ""

    def response(self, requested_model: str, latency_s: float) -> ModelResponse:
        return ModelResponse(
            content="".join(self.text),
            tool_calls=tuple(self.calls[i].build() for i in sorted(self.calls)),
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model or requested_model,
            latency_s=latency_s,
            # Tagged with the model we asked for (servers often answer with a
            # dated name): replay compares it with the next request's model.
            reasoning=self.reasoning.result(requested_model),
        )


def _usage(usage: CompletionUsage) -> Usage:
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None else None
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        cached_tokens=cached or 0,
    )


class OpenAIProvider:
    """`ModelProvider` on the `openai` SDK's `AsyncOpenAI`, always streaming."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout_s: float = 300.0,
        max_retries: int = 2,
        extra_headers: dict[str, str] | None = None,
        replay_reasoning: ReplayPolicy = "auto",
        key_source: str = "[llm] api_key_env or [llm] api_key_file",
        read_timeout_s: float = 60.0,
    ) -> None:
        self._base_url = base_url
        self._safe_url = redact_url(base_url)
        self._model = model
        self._errors = EndpointErrors(
            _ERRORS,
            url=self._safe_url,
            model=model,
            max_retries=max_retries,
            key_source=key_source,
            read_timeout_s=read_timeout_s,
        )
        self._deadline_s = timeout_s  # the whole call's (streaming_call.py)
        self._replay_reasoning: ReplayPolicy = replay_reasoning
        self._encoders = SessionEncoders()
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or _DUMMY_KEY,
            # Per read (connect, each chunk): the longest silence; the whole call's
            # deadline is stream_reply's, as a model that keeps talking resets this one.
            timeout=read_timeout_s,
            max_retries=max_retries,
            default_headers=extra_headers,
        )

    @property
    def configured(self) -> bool:
        return True

    def describe(self) -> str:
        return f"openai-compatible model {self._model!r} at {self._safe_url}"

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

    async def _open(self, request: ModelRequest) -> openai.AsyncStream[ChatCompletionChunk]:
        # `chat.completions.create` walks the whole body through the SDK's
        # TypedDict transform (tens of ms for a long trajectory). Our messages
        # and tools are plain JSON already: they are posted as the bytes the SDK
        # would encode, only the new tail encoded (same auth, retries, stream type).
        return await self._client.post(
            "/chat/completions",
            content=self._encoders.encode(request.session, self.wire_body(request)),
            cast_to=ChatCompletion,
            options={"security": {"bearer_auth": True}},
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )

    def wire_body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body posted to /chat/completions for this request."""
        model = request.model or self._model
        body: dict[str, object] = {
            "model": model,
            "messages": wire_messages(request.messages, self._replay_reasoning, model),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = request.tools
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        return body

    async def aclose(self) -> None:
        await self._client.close()


def _is_context_too_long(exc: openai.APIStatusError) -> bool:
    """OpenAI's code, and the wording of the servers that copy its API without it."""
    code = getattr(exc, "code", None)
    text = str(exc.message).lower()
    return code == "context_length_exceeded" or any(
        phrase in text
        for phrase in (
            "maximum context length",
            "context length",
            "too many tokens",
            "prompt is too long",
        )
    )


def from_config(llm: LlmSection, api_key: str | None) -> OpenAIProvider:
    """The provider ``[llm] provider = "openai"`` names (wakeful/llm/registry.py)."""
    return OpenAIProvider(
        base_url=llm.base_url,
        api_key=api_key,
        key_source=key_source(llm),
        model=llm.model,
        timeout_s=llm.timeout_s,
        read_timeout_s=llm.read_timeout_s,
        max_retries=llm.max_retries,
        replay_reasoning=llm.replay_reasoning,
    )
