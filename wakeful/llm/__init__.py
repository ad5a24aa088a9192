"""Model providers: one small interface, OpenAI-compatible and Anthropic ones, a null one.

Which one a config names is looked up in :mod:`wakeful.llm.registry` (one line each).
"""

from typing import TYPE_CHECKING, Any

from wakeful.core.provider import (
    HOW_TO_CONFIGURE,
    ContextTooLong,
    DeltaCallback,
    Message,
    ModelKeyRefused,
    ModelNotConfigured,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    ProviderError,
    ToolCall,
    ToolDefinition,
    Usage,
)
from wakeful.llm.null_provider import NullProvider

if TYPE_CHECKING:
    from wakeful.llm.anthropic_provider import AnthropicProvider
    from wakeful.llm.openai_provider import OpenAIProvider


def __getattr__(name: str) -> Any:
    # The openai SDK takes about half a second to import; a daemon with no
    # model configured (the embedded default) never needs it.
    if name == "OpenAIProvider":
        from wakeful.llm.openai_provider import OpenAIProvider

        return OpenAIProvider
    if name == "AnthropicProvider":
        from wakeful.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider
    raise AttributeError(f"module 'wakeful.llm' has no attribute {name!r}")


__all__ = [
    "HOW_TO_CONFIGURE",
    "AnthropicProvider",
    "ContextTooLong",
    "DeltaCallback",
    "Message",
    "ModelKeyRefused",
    "ModelNotConfigured",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "NullProvider",
    "OpenAIProvider",
    "ProviderError",
    "ToolCall",
    "ToolDefinition",
    "Usage",
]
