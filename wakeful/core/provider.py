"""The one small interface every model provider implements.

Messages are OpenAI chat-completions dicts (``role``, ``content``,
``tool_calls``, ``tool_call_id``); that is the trajectory's canonical form.
A provider streams one completion and returns it whole; cancelling the
calling task closes the HTTP response at once (SPEC §4 rule 4: the partial
output is simply never returned, so it cannot reach the trajectory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from wakeful.core.reasoning import REASONING_KEY, Reasoning

Message = dict[str, Any]
ToolDefinition = dict[str, Any]
DeltaCallback = Callable[[str], Awaitable[None]]


class ProviderError(Exception):
    """The model call failed; the message says what to check."""


class ModelNotConfigured(ProviderError):
    """No model is configured; events are stored and wait."""


class ModelKeyRefused(ProviderError):
    """The endpoint refused the API key (HTTP 401/403): retrying cannot help."""


class ContextTooLong(ProviderError):
    """The request is longer than the model's context window."""


class ModelUnavailable(ProviderError):
    """The endpoint is down, overloaded or refused us after retries."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON text the model produced, passed through untouched

    def as_message_part(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True)
class ModelRequest:
    messages: list[Message]
    tools: list[ToolDefinition] = field(default_factory=list)
    model: str | None = None  # None: the provider's configured model
    max_tokens: int | None = None
    # The session whose previous request this one extends: the provider encodes
    # only what changed since that one (wakeful/llm/request_encoding.py). None
    # for one-off calls (a summary, a side session), encoded whole.
    session: str | None = None


@dataclass(frozen=True)
class ModelResponse:
    content: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: Usage
    model: str
    latency_s: float
    reasoning: Reasoning | None = None

    def as_message(self) -> Message:
        """The assistant message exactly as it goes into the trajectory (rule 1):
        content, tool calls and the reasoning as the provider returned it.
        The provider decides what of the reasoning goes back on the wire."""
        message: Message = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        if self.reasoning is not None:
            message[REASONING_KEY] = self.reasoning.as_field()
        return message


@runtime_checkable
class WireBody(Protocol):
    """A provider that can show the body it would post (`wakeful trajectory --raw`)."""

    def wire_body(self, request: ModelRequest) -> dict[str, object]: ...


class ModelProvider(Protocol):
    """Streams one chat completion with tool calls."""

    @property
    def configured(self) -> bool: ...

    def describe(self) -> str:
        """One line for logs and /api/status (never contains a secret)."""
        ...

    async def complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None = None
    ) -> ModelResponse: ...

    async def aclose(self) -> None: ...


# Said by the null provider, the start-up log and /v1/status while no model is set.
HOW_TO_CONFIGURE = (
    "no model is configured: set [llm] model and base_url in wakeful.toml "
    "(or WAKEFUL_LLM__MODEL / WAKEFUL_LLM__BASE_URL), "
    "and the API key via [llm] api_key_env or api_key_file"
)
