"""The ``[budget]`` section: caps in tokens and, with a price table, in US dollars."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, field_validator

from wakeful.kernel.config_base import Section
from wakeful.kernel.field_defaults import empty_dict


class ModelPrice(Section):
    """US dollars per million tokens of one model."""

    input: float = Field(ge=0, description="Per million input tokens.")
    output: float = Field(ge=0, description="Per million output tokens.")
    cached_input: float | None = Field(
        default=None, ge=0, description="Per million cached input tokens (default: input)."
    )


class BudgetSection(Section):
    """Caps on what the model may spend; 0 is no cap. Off (no caps) by default."""

    daily_tokens: int = Field(
        default=0, ge=0, description="Tokens (in + out) a day, all sessions together."
    )
    monthly_tokens: int = Field(default=0, ge=0, description="Tokens a month, all sessions.")
    session_daily_tokens: int = Field(default=0, ge=0, description="Tokens a day, per session.")
    source_daily_tokens: dict[str, int] = Field(
        default_factory=empty_dict,
        examples=[{"webhook": 200000}],
        description="Tokens a day per source type of the event a run answers "
        "(webhook, email, timer, user, system, …).",
    )
    daily_usd: float = Field(default=0, ge=0, description="US dollars a day (needs prices).")
    monthly_usd: float = Field(default=0, ge=0, description="US dollars a month (needs prices).")
    prices: dict[str, ModelPrice] = Field(
        default_factory=empty_dict,
        description='Per model name: [budget.prices."gpt-4o"] input = 2.5, output = 10.0.',
    )
    timezone: str = Field(
        default="UTC", description="Where a day and a month begin (an IANA time zone)."
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("must be an IANA time zone such as 'UTC' or 'Europe/Berlin'") from None
        return value

    @field_validator("source_daily_tokens")
    @classmethod
    def _caps_are_positive(cls, value: dict[str, int]) -> dict[str, int]:
        negative = sorted(name for name, cap in value.items() if cap < 0)
        if negative:
            raise ValueError(f"a cap must be 0 (none) or more; {', '.join(negative)} is not")
        return value

    @property
    def configured(self) -> bool:
        return any(
            (
                self.daily_tokens,
                self.monthly_tokens,
                self.session_daily_tokens,
                any(self.source_daily_tokens.values()),
                self.daily_usd,
                self.monthly_usd,
            )
        )


class BudgetSettings(BaseModel):
    budget: BudgetSection = Field(default_factory=BudgetSection)
