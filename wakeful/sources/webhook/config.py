"""``[[hooks]]``: one entry per ``POST /hooks/<name>``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from wakeful.kernel.config_base import reject_repeated_names
from wakeful.kernel.field_defaults import empty_list
from wakeful.kernel.session_names import SESSION_PATTERN

HOOK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# A hook template's placeholders: {dotted.path} into the JSON; {{ and }} are literal braces.
TEMPLATE_FIELD = re.compile(r"\{([A-Za-z0-9_.-]+)\}")
FilterValue = str | int | float | bool


class HookFilter(BaseModel):
    """One condition on a delivery's JSON: the value at ``field`` equals / is one of / matches."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(min_length=1, examples=["action"])
    equals: FilterValue | None = Field(default=None, examples=["opened"])
    one_of: list[FilterValue] | None = Field(default=None, examples=[["opened", "closed"]])
    pattern: str | None = Field(default=None, examples=["^refs/heads/main$"])

    @model_validator(mode="after")
    def _exactly_one_test(self) -> HookFilter:
        tests = [n for n in ("equals", "one_of", "pattern") if getattr(self, n) is not None]
        if len(tests) != 1:
            raise ValueError(
                "a filter needs `field` and exactly one of `equals`, `one_of` or `pattern`, "
                'e.g. {field = "action", equals = "opened"}'
            )
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"`pattern` is not a valid regular expression: {exc}") from None
        return self


class HookConfig(BaseModel):
    """One ``[[hooks]]`` entry: ``POST /hooks/<name>``, its auth, secrets and mapping."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, examples=["github"])
    auth: Literal["standard", "github", "bearer"] = Field(default="standard", examples=["github"])
    # Every configured secret is accepted at once, so a sender's secret can rotate.
    secret: SecretStr | None = None
    secrets: list[SecretStr] = Field(default_factory=empty_list)
    secret_env: list[str] = Field(default_factory=empty_list, examples=[["GITHUB_WEBHOOK_SECRET"]])
    secret_file: Path | None = Field(default=None, examples=["/etc/wakeful/github-secret"])
    session: str = Field(default="main", examples=["main"])
    max_body_bytes: int = Field(default=1024 * 1024, ge=1, examples=[1048576])
    template: str | None = Field(default=None, examples=["{action} on {repository.full_name}"])
    preset: Literal["github"] | None = Field(default=None, examples=["github"])
    priority: Literal["low", "normal", "high", "urgent"] = Field(
        default="normal", examples=["normal"]
    )
    events: list[str] = Field(default_factory=empty_list, examples=[["push", "pull_request"]])
    filters: list[HookFilter] = Field(default_factory=empty_list)

    @field_validator("name")
    @classmethod
    def _url_safe_name(cls, value: str) -> str:
        if not HOOK_NAME.match(value):
            raise ValueError("must be 1-64 letters, digits and _.- (it is the URL /hooks/<name>)")
        return value

    @field_validator("session")
    @classmethod
    def _session_name(cls, value: str) -> str:
        if not SESSION_PATTERN.match(value):
            raise ValueError("must be 1-128 letters, digits and _.:@- (e.g. 'main')")
        return value

    @field_validator("secret_env", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("template")
    @classmethod
    def _balanced_template(cls, value: str | None) -> str | None:
        if value is None:
            return value
        rest = TEMPLATE_FIELD.sub("", value.replace("{{", "").replace("}}", ""))
        if "{" in rest or "}" in rest:
            raise ValueError(
                "placeholders are {dotted.path} of letters, digits and _.-; "
                "write {{ or }} for a literal brace"
            )
        return value


class WebhookSettings(BaseModel):
    hooks: list[HookConfig] = Field(default_factory=empty_list)

    @field_validator("hooks")
    @classmethod
    def _unique_hook_names(cls, hooks: list[HookConfig]) -> list[HookConfig]:
        reject_repeated_names([hook.name for hook in hooks], "hook")
        return hooks
