"""`[store]`: where durable state lives (SQLite file or Redis), and the fleet's leases."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from wakeful.kernel.config_base import Section


class StoreSection(Section):
    backend: Literal["sqlite", "redis"] = Field(
        default="sqlite",
        examples=["sqlite"],
        description="sqlite (embedded, the default) or redis.",
    )
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0", examples=["redis://127.0.0.1:6379/0"]
    )
    redis_prefix: str = Field(
        default="wakeful:",
        min_length=1,
        examples=["wakeful:"],
        description=(
            "Start of every key the daemon writes in Redis; one daemon per prefix, or a fleet"
            " (fleet = true)."
        ),
    )
    fleet: bool = Field(
        default=False,
        examples=[False],
        description=(
            "redis only: several daemons share this prefix (each session has one owner at a"
            " time); set it on every daemon of the prefix."
        ),
    )
    session_lease_ms: int = Field(
        default=10_000,
        ge=1000,
        examples=[10_000],
        description="fleet: how long a session stays with a daemon that stopped renewing it.",
    )
    claim_idle_ms: int = Field(
        default=15_000,
        ge=1000,
        examples=[15_000],
        description=(
            "fleet: how long an event's stream entry idles on a silent daemon before another"
            " claims it."
        ),
    )
    max_deliveries: int = Field(
        default=5,
        ge=1,
        examples=[5],
        description=(
            "fleet: claims of one entry (its daemons died holding it) before it goes to the"
            " dead-letter stream."
        ),
    )
    sqlite_synchronous: Literal["full", "normal"] = Field(
        default="full",
        examples=["full"],
        description="full: a 202 survives a power cut; normal: faster, survives a process crash.",
    )

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @model_validator(mode="after")
    def _fleet_needs_redis(self) -> StoreSection:
        if self.fleet and self.backend != "redis":
            raise ValueError('fleet = true needs backend = "redis" (daemons share one Redis)')
        return self
