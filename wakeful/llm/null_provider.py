"""The provider used while no model is configured: events wait, nothing fails loudly."""

from __future__ import annotations

from wakeful.core.provider import (
    HOW_TO_CONFIGURE,
    DeltaCallback,
    ModelNotConfigured,
    ModelRequest,
    ModelResponse,
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
