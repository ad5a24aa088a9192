"""The provider used while no model is configured: events wait, nothing fails loudly."""

from __future__ import annotations

from wakeful.llm.base import DeltaCallback, ModelNotConfigured, ModelRequest, ModelResponse

HOW_TO_CONFIGURE = (
    "no model is configured: set [llm] model and base_url in wakeful.toml "
    "(or WAKEFUL_LLM__MODEL / WAKEFUL_LLM__BASE_URL), "
    "and the API key via [llm] api_key_env or api_key_file"
)


class NullProvider:
    """Refuses every completion with the how-to-configure text."""

    @property
    def configured(self) -> bool:
        return False

    def describe(self) -> str:
        return "no model configured"

    async def complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        raise ModelNotConfigured(HOW_TO_CONFIGURE)

    async def aclose(self) -> None:
        return None
