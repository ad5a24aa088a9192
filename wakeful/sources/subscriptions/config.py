"""``[subscriptions]``: limits for the sources the agent connects itself."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from wakeful.kernel.config_base import Section
from wakeful.kernel.field_defaults import empty_list


class SubscriptionsSection(Section):
    # Active subscriptions across every session; connect_channel refuses beyond it.
    max: int = Field(default=50, ge=0, le=10_000, examples=[50])
    # The shortest interval an http_check may ask for: a check is a request to someone
    # else's server, and an idle daemon should stay idle.
    min_http_interval_s: float = Field(default=60.0, ge=1, examples=[60])
    # File changes closer together than this are reported as one event.
    debounce_ms: int = Field(default=500, ge=10, le=60_000, examples=[500])
    # Directories a file subscription may watch besides the workspace.
    watch_paths: list[Path] = Field(default_factory=empty_list, examples=[["/var/log/myapp"]])


class SubscriptionSettings(BaseModel):
    subscriptions: SubscriptionsSection = Field(default_factory=SubscriptionsSection)
