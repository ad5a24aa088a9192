"""Which caps a call counts towards, in which window, and what it costs in each.

A cap is named by its config key (``daily_tokens``, ``source_daily_tokens.webhook``, …):
the same name ``wakeful budget set`` takes. Its window is the day or the month in the
budget's time zone; a new window starts from nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from wakeful.budget.config import BudgetSection, ModelPrice
from wakeful.core.provider import Usage
from wakeful.core.spend import SpendRequest

Metric = Literal["tokens", "usd"]
Period = Literal["day", "month"]
MICRO = 1_000_000  # dollars are kept as whole micro-dollars: integers add exactly


@dataclass(frozen=True)
class Cap:
    name: str  # the config key
    metric: Metric
    period: Period
    applies_to: Literal["daemon", "session", "source"]
    source: str = ""  # for a per-source cap


@dataclass(frozen=True)
class Account:
    """One cap for one session or source in one window: a record in the ledger."""

    cap: Cap
    instance: str  # "" (the daemon), the session, or the source
    window: str  # "day:2026-12-04" or "month:2026-12"

    @property
    def key(self) -> str:
        return f"budget:{self.cap.name}:{self.instance}:{self.window}"

    def describe(self) -> str:
        who = {"daemon": "", "session": f" for session {self.instance}"}.get(
            self.cap.applies_to, f" for {self.instance} events"
        )
        return f"[budget] {self.cap.name}{who} ({self.window})"


def all_caps(section: BudgetSection) -> list[Cap]:
    caps = [
        Cap("daily_tokens", "tokens", "day", "daemon"),
        Cap("monthly_tokens", "tokens", "month", "daemon"),
        Cap("session_daily_tokens", "tokens", "day", "session"),
        Cap("daily_usd", "usd", "day", "daemon"),
        Cap("monthly_usd", "usd", "month", "daemon"),
    ]
    caps += [
        Cap(f"source_daily_tokens.{source}", "tokens", "day", "source", source)
        for source in sorted(section.source_daily_tokens)
    ]
    return caps


def configured_limit(section: BudgetSection, cap: Cap) -> float:
    if cap.applies_to == "source":
        return float(section.source_daily_tokens.get(cap.source, 0))
    return float(getattr(section, cap.name))


def window(period: Period, now: datetime, zone: ZoneInfo) -> str:
    local = now.astimezone(zone)
    return f"day:{local:%Y-%m-%d}" if period == "day" else f"month:{local:%Y-%m}"


def next_window_start(now: datetime, zone: ZoneInfo) -> datetime:
    """The next midnight in the budget's zone: where a day (and maybe a month) begins."""
    local = now.astimezone(zone)
    return (local + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


def accounts(
    caps: list[Cap], request: SpendRequest, now: datetime, zone: ZoneInfo
) -> list[Account]:
    """The accounts one call counts towards."""
    found = []
    for cap in caps:
        if cap.applies_to == "session":
            if request.session is None:
                continue
            instance = request.session
        elif cap.applies_to == "source":
            if cap.source != request.origin:
                continue
            instance = cap.source
        else:
            instance = ""
        found.append(Account(cap, instance, window(cap.period, now, zone)))
    return found


def worst_case(cap: Cap, request: SpendRequest, price: ModelPrice | None) -> int:
    """The most the call can cost in the cap's metric (tokens, or micro-dollars)."""
    if cap.metric == "tokens":
        return request.input_tokens + request.max_output_tokens
    if price is None:
        return 0
    return round(request.input_tokens * price.input + request.max_output_tokens * price.output)


def actual(cap: Cap, request: SpendRequest, usage: Usage | None, price: ModelPrice | None) -> int:
    """What the call used in the cap's metric; the input estimate when usage is unknown."""
    if usage is None:
        tokens_in, cached, tokens_out = request.input_tokens, 0, 0
    else:
        tokens_in, cached, tokens_out = (
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.completion_tokens,
        )
    if cap.metric == "tokens":
        return tokens_in + tokens_out
    if price is None:
        return 0
    cached_price = price.input if price.cached_input is None else price.cached_input
    return round(
        (tokens_in - cached) * price.input + cached * cached_price + tokens_out * price.output
    )
