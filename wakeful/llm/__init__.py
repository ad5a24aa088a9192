"""Model providers: one small interface, an OpenAI-compatible implementation, a null one."""

from wakeful.llm.base import (
    DeltaCallback,
    Message,
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
from wakeful.llm.null_provider import HOW_TO_CONFIGURE, NullProvider
from wakeful.llm.openai_provider import OpenAIProvider

__all__ = [
    "HOW_TO_CONFIGURE",
    "DeltaCallback",
    "Message",
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
