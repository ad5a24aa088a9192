"""The model providers, by their ``[llm] provider`` name: one line each.

A provider is its own module (a class that implements
:class:`wakeful.core.provider.ModelProvider`, and a factory
``from_config(llm: LlmSection, api_key: str | None) -> ModelProvider``) plus
one entry in :data:`PROVIDERS`. The entry names the factory by its import
path, so a provider's module (and its SDK: the openai SDK alone takes about
half a second to import) is imported only when the config chooses it.

Nothing here imports :mod:`wakeful.llm.config` at run time: the config
validates ``provider`` against these names, so the import goes the other way.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from wakeful.core.provider import ModelProvider
    from wakeful.llm.config import LlmSection

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OPENAI_KEY_ENV = "OPENAI_API_KEY"

ProviderFactory = Callable[["LlmSection", "str | None"], "ModelProvider"]


@dataclass(frozen=True)
class ProviderEntry:
    """How one provider is built, and what ``[llm]`` defaults it brings."""

    # "package.module:function", the function a ProviderFactory; imported when chosen.
    factory: str
    # [llm] base_url and api_key_env when the config leaves them unset.
    base_url: str = OPENAI_BASE_URL
    api_key_env: str = OPENAI_KEY_ENV
    # The SDK's import name, checked when the config is loaded (a missing SDK is a
    # config error that says how to install it, not a crash at the first message).
    sdk: str | None = None
    # The package extra that installs the SDK: pip install 'wakeful[<extra>]'.
    extra: str | None = None

    def missing_sdk(self, name: str) -> str | None:
        """Why this provider cannot run here (its SDK is not installed), or None."""
        if self.sdk is None or importlib.util.find_spec(self.sdk) is not None:
            return None
        install = f"'wakeful[{self.extra}]'" if self.extra else self.sdk
        return (
            f'provider = "{name}" needs the {self.sdk} SDK, which is not installed; '
            f"install it with: pip install {install}"
        )


# The one line a new provider adds. Names are config values: never rename one.
PROVIDERS: dict[str, ProviderEntry] = {
    "openai": ProviderEntry("wakeful.llm.openai_provider:from_config"),
    "anthropic": ProviderEntry(
        "wakeful.llm.anthropic_provider:from_config",
        base_url=ANTHROPIC_BASE_URL,
        api_key_env="ANTHROPIC_API_KEY",
        sdk="anthropic",
        extra="anthropic",
    ),
}


def provider_entry(name: str) -> ProviderEntry:
    """The registered provider ``name``; a ValueError naming the choices otherwise."""
    entry = PROVIDERS.get(name)
    if entry is None:
        choices = ", ".join(PROVIDERS)
        raise ValueError(f"not a known provider; choose one of: {choices}")
    return entry


def build_provider(llm: LlmSection, api_key: str | None) -> ModelProvider:
    """The provider ``llm.provider`` names, built by its factory (imported now)."""
    factory = cast("ProviderFactory", load(provider_entry(llm.provider).factory))
    return factory(llm, api_key)


def load(path: str) -> object:
    """What ``"package.module:attribute"`` names, importing the module."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)
