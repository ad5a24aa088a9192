"""What the model calls cost, added up: tokens in and out, the cached share of the
input, and — with a price for the model in ``[budget.prices]`` — US dollars; by day,
session, source (of the event a run answered) or model. Read from the store's record
of every model call, so it covers every session and survives restarts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from wakeful.budget.config import ModelPrice
from wakeful.store.base import ModelCallRecord

GROUPINGS = ("day", "session", "source", "model")
MILLION = 1_000_000


@dataclass
class Row:
    key: str
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached_in: int = 0
    cost_usd: float | None = 0.0  # None: a call of a model without a price

    def add(self, record: ModelCallRecord, price: ModelPrice | None) -> None:
        self.calls += 1
        self.tokens_in += record.prompt_tokens
        self.tokens_out += record.completion_tokens
        self.cached_in += record.cached_tokens
        if price is None or self.cost_usd is None:
            self.cost_usd = None
            return
        cached = min(record.cached_tokens, record.prompt_tokens)
        cached_price = price.cached_input if price.cached_input is not None else price.input
        self.cost_usd += (
            (record.prompt_tokens - cached) * price.input
            + cached * cached_price
            + record.completion_tokens * price.output
        ) / MILLION

    def public(self) -> dict[str, Any]:
        share = self.cached_in / self.tokens_in if self.tokens_in else 0.0
        cost = round(self.cost_usd, 6) if self.cost_usd is not None else None
        return {
            "key": self.key,
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cached_share": round(share, 3),
            "cost_usd": cost,
        }


def key_of(record: ModelCallRecord, by: str, zone: ZoneInfo) -> str:
    if by == "day":
        if not record.created_at:
            return "unknown"
        return datetime.fromtimestamp(record.created_at, zone).date().isoformat()
    if by == "session":
        return record.session
    if by == "source":
        return record.source or "unknown"  # calls recorded before sources were kept
    return record.model or "unknown"


def usage(
    records: Iterable[ModelCallRecord],
    *,
    by: str,
    zone: ZoneInfo,
    prices: Mapping[str, ModelPrice],
    since: float = 0.0,
) -> dict[str, Any]:
    """Rows by ``by`` (day, session, source or model), newest day / largest first, and
    the total; only calls recorded at or after ``since`` (epoch seconds)."""
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {', '.join(GROUPINGS)}, not {by!r}")
    rows: dict[str, Row] = {}
    total = Row("total")
    for record in records:
        if record.created_at and record.created_at < since:
            continue
        price = prices.get(record.model)
        key = key_of(record, by, zone)
        rows.setdefault(key, Row(key)).add(record, price)
        total.add(record, price)
    ordered = sorted(rows.values(), key=lambda r: r.key, reverse=True) if by == "day" else (
        sorted(rows.values(), key=lambda r: r.tokens_in + r.tokens_out, reverse=True)
    )  # fmt: skip
    return {"by": by, "rows": [r.public() for r in ordered], "total": total.public()}
