"""The ``[context]`` section: how many tokens a session may send the model."""

from __future__ import annotations

from pydantic import Field

from wakeful.kernel.config_base import Section

DEFAULT_WINDOW = 128_000
MIN_DEFAULT_RESERVE = 1024
MAX_DEFAULT_RESERVE = 8192
# Context windows of common models, by name prefix (the longest match wins); an
# unknown model gets DEFAULT_WINDOW. Set [context] max_tokens for anything else.
MODEL_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "deepseek": 64_000,
    "llama3": 8_192,
    "llama-3.1": 128_000,
    "qwen2.5": 32_768,
    "mistral": 32_768,
}


def model_window(model: str) -> int:
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in MODEL_WINDOWS if name.startswith(prefix)]
    return MODEL_WINDOWS[max(matches, key=len)] if matches else DEFAULT_WINDOW


class ContextSection(Section):
    max_tokens: int | None = Field(
        default=None,
        ge=1024,
        examples=[128000],
        description=(
            "The model's context window in tokens; default: from a built-in table of common "
            "models by [llm] model, else 128000."
        ),
    )
    reserve_tokens: int | None = Field(
        default=None,
        ge=256,
        examples=[8192],
        description=(
            "Kept free for the model's reply: a request is at most max_tokens minus this; "
            "default: an eighth of the window, at least 1024 and at most 8192."
        ),
    )
    keep_user_messages: int = Field(
        default=5,
        ge=1,
        examples=[5],
        description="A compaction keeps at least this many of the newest user messages verbatim.",
    )
    keep_tool_results: int = Field(
        default=8,
        ge=1,
        examples=[8],
        description=(
            "Pruning stubs the newest this many tool results only when stubbing the older "
            "ones cannot make the request fit."
        ),
    )

    compaction_failures_to_trip: int = Field(
        default=3,
        ge=1,
        examples=[3],
        description=(
            "After this many failed compactions in a row (the summary failed, or did not "
            "bring the request within the budget) a session asks for no more until "
            "compaction_cooldown_s pass or `wakeful context reset SESSION`."
        ),
    )
    compaction_cooldown_s: float = Field(
        default=600,
        ge=0,
        examples=[600],
        description="How long the compaction breaker stays open before one more try.",
    )

    def window(self, model: str) -> int:
        return self.max_tokens or model_window(model)

    def reserve(self, window: int) -> int:
        """Tokens kept free for the reply in a ``window``: the configured reserve, else
        :func:`default_reserve`."""
        return self.reserve_tokens if self.reserve_tokens is not None else default_reserve(window)


def default_reserve(window: int) -> int:
    """An eighth of the window, within 1024..8192. A fixed 8192 left an 8k model a
    budget of 0 and a 16k one less than its system prompt and tools; an eighth keeps
    7/8 of any window for the request, 1024 tokens is still a useful reply, and 8192
    (the default ``[llm] max_output_tokens``) is all a reply may take anyway."""
    return min(MAX_DEFAULT_RESERVE, max(MIN_DEFAULT_RESERVE, window // 8))
