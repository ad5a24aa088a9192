"""`[llm]`: the model, its endpoint and where its API key comes from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from wakeful.kernel.config_base import Section, read_secret_file
from wakeful.llm.registry import (
    ANTHROPIC_BASE_URL,
    OPENAI_BASE_URL,
    OPENAI_KEY_ENV,
    PROVIDERS,
    provider_entry,
)


class LlmSection(Section):
    # A name in wakeful/llm/registry.py's PROVIDERS (checked below, so a provider
    # added there is accepted here without a line in this file).
    provider: str = Field(
        default="openai",
        examples=["openai"],
        description=(
            "openai: any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama, LM Studio); "
            "anthropic: Anthropic's Messages API (needs the wakeful[anthropic] extra)."
        ),
    )
    base_url: str = Field(
        default=OPENAI_BASE_URL,
        examples=[OPENAI_BASE_URL],
        description=f"The API's URL; unset with provider = anthropic: {ANTHROPIC_BASE_URL}.",
    )
    model: str = Field(
        default="",
        examples=["gpt-4.1-mini"],
        description="The model name; empty: events are stored and wait until one is set.",
    )
    fast_model: str = Field(
        default="",
        examples=["gpt-4.1-nano"],
        description="A cheaper model on the same endpoint for routine check-ins (the "
        "heartbeat's session); empty: model.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        examples=["sk-..."],
        description="The model key inline (prefer api_key_env or api_key_file).",
    )
    api_key_env: str = Field(
        default=OPENAI_KEY_ENV,
        examples=[OPENAI_KEY_ENV],
        description=(
            "The environment variable that holds the model key; unset with provider = "
            "anthropic: ANTHROPIC_API_KEY."
        ),
    )
    api_key_file: Path | None = Field(
        default=None,
        examples=["/etc/wakeful/openai-key"],
        description=(
            "A file holding the model key (a relative name is a systemd credential, or is found "
            "beside the config)."
        ),
    )
    # Two limits: a model that keeps streaming never trips a per-read timeout,
    # so the whole call has its own deadline; a server that stalls is caught
    # sooner by the silence limit. 60 s of silence is what one read was allowed
    # before, enough for a long prompt's first token; 300 s lets a long reply
    # (thousands of tokens) finish.
    timeout_s: float = Field(
        default=300.0,
        gt=0,
        examples=[300],
        description=(
            "Seconds one whole model call may take, retries included; past it the stream is "
            "closed and the call fails."
        ),
    )
    read_timeout_s: float = Field(
        default=60.0,
        gt=0,
        examples=[60],
        description=(
            "The longest silence of a model call in seconds: waiting for the answer or between "
            "two chunks."
        ),
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        le=20,
        examples=[2],
        description="Retries of a model call on 429 and 5xx (never on a refused key).",
    )
    # Reasoning is always kept in the trajectory (SPEC §4 rule 1); this says
    # what of it is sent back. auto: on tool-call turns, to the model that
    # produced it (what DeepSeek's thinking mode needs; vanilla OpenAI streams
    # none, so gets none); always: on every assistant turn; never: not at all.
    replay_reasoning: Literal["auto", "always", "never"] = Field(
        default="auto",
        examples=["auto"],
        description=(
            "What reasoning goes back to the model: auto (tool-call turns, same model), always, "
            "never. It is always kept in the trajectory."
        ),
    )

    # Anthropic requires max_tokens on every request; OpenAI-compatible servers
    # are sent none (their own default), so this applies to provider = anthropic.
    max_output_tokens: int = Field(
        default=8192,
        ge=1,
        examples=[8192],
        description=(
            "Most tokens one reply may have, thinking included (provider = anthropic, where "
            "the API requires it)."
        ),
    )
    thinking_budget_tokens: int = Field(
        default=0,
        ge=0,
        examples=[0, 4096],
        description=(
            "Anthropic extended thinking: tokens the model may think before answering "
            "(at least 1024, below max_output_tokens); 0: off."
        ),
    )

    @field_validator("provider")
    @classmethod
    def _registered(cls, value: str) -> str:
        provider_entry(value)  # a ValueError naming the choices
        return value

    @model_validator(mode="after")
    def _provider_defaults(self) -> LlmSection:
        # The defaults name OpenAI's URL and key variable; with another provider
        # and those keys unset, that provider's are meant.
        entry = PROVIDERS[self.provider]
        missing = entry.missing_sdk(self.provider)
        if missing is not None:
            raise ValueError(missing)
        # Assigned only when they differ: an assignment marks the key as set.
        if "base_url" not in self.model_fields_set and self.base_url != entry.base_url:
            self.base_url = entry.base_url
        if "api_key_env" not in self.model_fields_set and self.api_key_env != entry.api_key_env:
            self.api_key_env = entry.api_key_env
        budget = self.thinking_budget_tokens
        if budget and budget < 1024:
            raise ValueError(
                f"thinking_budget_tokens = {budget} is below the API's minimum of 1024; "
                "set 1024 or more, or 0 for no thinking"
            )
        if budget and budget >= self.max_output_tokens:
            raise ValueError(
                f"thinking_budget_tokens = {budget} must be below max_output_tokens = "
                f"{self.max_output_tokens}; raise max_output_tokens or lower the budget"
            )
        return self

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @property
    def configured(self) -> bool:
        """Whether a model is named. Without one the daemon still starts: events are
        stored and wait (the null provider), and its alerts say why."""
        return bool(self.model)

    def resolve_api_key(self) -> str | None:
        """api_key, else api_key_file's contents, else the env var api_key_env names."""
        if self.api_key is not None and self.api_key.get_secret_value():
            return self.api_key.get_secret_value()
        if self.api_key_file is not None:
            return read_secret_file(self.api_key_file, "llm.api_key_file")
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None
