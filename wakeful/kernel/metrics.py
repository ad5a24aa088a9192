"""Counters and histograms in the Prometheus text format, in-house.

Tiny on purpose: label sets are dicts, values are floats, rendering is one
pass. (``prometheus_client`` would do the same for ~1 MB of RSS and a
process-wide registry we would have to reset between in-process daemons.)
Counters live at module level, like a default registry, so the code that
counts needs no plumbing; gauges that describe the present (queue depth,
running tasks) are computed when ``/metrics`` is read — see
:mod:`wakeful.app.http.observability`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

Labels = tuple[tuple[str, str], ...]


def _key(labels: Mapping[str, str]) -> Labels:
    return tuple(sorted((k, str(v)) for k, v in labels.items()))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


def format_value(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _labelled_samples(
    name: str, help_text: str, kind: str, values: Mapping[Labels, float]
) -> Iterable[str]:
    yield f"# HELP {name} {help_text}"
    yield f"# TYPE {name} {kind}"
    for labels, value in sorted(values.items()):
        yield f"{name}{format_labels(labels)} {format_value(value)}"


class Family(Protocol):
    name: str

    def render(self) -> Iterable[str]: ...


@dataclass
class Counter:
    name: str
    help: str
    values: dict[Labels, float] = field(default_factory=dict)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount:
            key = _key(labels)
            self.values[key] = self.values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self.values.get(_key(labels), 0.0)

    def render(self) -> Iterable[str]:
        return _labelled_samples(self.name, self.help, "counter", self.values)


@dataclass
class Gauge:
    """A value of the present, filled in just before rendering."""

    name: str
    help: str
    values: dict[Labels, float] = field(default_factory=dict)

    def set(self, value: float, **labels: str) -> None:
        self.values[_key(labels)] = value

    def render(self) -> Iterable[str]:
        return _labelled_samples(self.name, self.help, "gauge", self.values)


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.buckets)
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
        self.total += value
        self.count += 1

    def render(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} histogram"
        counts = self.counts or [0] * len(self.buckets)
        for bound, count in zip(self.buckets, counts, strict=True):
            yield f'{self.name}_bucket{{le="{format_value(bound)}"}} {count}'
        yield f'{self.name}_bucket{{le="+Inf"}} {self.count}'
        yield f"{self.name}_sum {format_value(self.total)}"
        yield f"{self.name}_count {self.count}"


def render(families: Iterable[Family], *, hidden_labels: frozenset[str] = frozenset()) -> str:
    """The text format; samples differing only in ``hidden_labels`` are summed into one."""
    shown = [_without(f, hidden_labels) for f in families] if hidden_labels else families
    return "\n".join(line for family in shown for line in family.render()) + "\n"


def _without(family: Family, hidden: frozenset[str]) -> Family:
    if not isinstance(family, Counter | Gauge):
        return family  # histograms carry no labels
    merged: dict[Labels, float] = {}
    for labels, value in family.values.items():
        key = tuple((k, v) for k, v in labels if k not in hidden)
        merged[key] = merged.get(key, 0.0) + value
    return replace(family, values=merged)


EVENTS_ACCEPTED = Counter(
    "wakeful_events_accepted_total", "Events stored for the first time, by kind and source."
)
DUPLICATES = Counter(
    "wakeful_events_duplicate_total", "Events dropped because their id was seen before."
)
DECISIONS = Counter("wakeful_route_decisions_total", "Routing decisions, by strategy and kind.")
MODEL_CALLS = Counter("wakeful_model_calls_total", "Model calls, by outcome.")
MODEL_TOKENS = Counter("wakeful_model_tokens_total", "Model tokens, by type.")
# Per call, the part of its input read from the prompt cache (Anthropic's
# cache_read_input_tokens, OpenAI's cached_tokens): what the cache breakpoints buy.
MODEL_CACHED_SHARE = Histogram(
    "wakeful_model_cached_share",
    "Share of one model call's input tokens read from the prompt cache.",
    (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99),
)
MODEL_LATENCY = Histogram(
    "wakeful_model_call_seconds",
    "Model call latency (request to last token).",
    (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
INTERRUPTS = Counter("wakeful_interrupts_total", "Forced safe points (cancel, stop), by session.")
PLACEHOLDERS = Counter(
    "wakeful_placeholders_total", "Placeholder tool results written, by session."
)
TOOL_CALLS = Counter("wakeful_tool_calls_total", "Tool calls finished, by tool and outcome.")
POLICY_VERDICTS = Counter(
    "wakeful_policy_verdicts_total", "The safety policy's verdicts on tool calls, by step."
)
COMPONENT_CRASHES = Counter(
    "wakeful_component_crashes_total", "Component run() failures (restarted), by component."
)
SESSION_CRASHES = Counter(
    "wakeful_session_crashes_total", "Session loops that raised and were restarted, by error."
)
EVENTS_QUARANTINED = Counter(
    "wakeful_events_quarantined_total", "Events moved out of the queue for crashing their session."
)
BACKGROUND_FAILURES = Counter(
    "wakeful_background_failures_total",
    "Routing steps that raised (classify, parallel answer); the event went back to the queue.",
)

COUNTERS: tuple[Family, ...] = (
    EVENTS_ACCEPTED,
    DUPLICATES,
    DECISIONS,
    MODEL_CALLS,
    MODEL_TOKENS,
    MODEL_LATENCY,
    MODEL_CACHED_SHARE,
    INTERRUPTS,
    PLACEHOLDERS,
    TOOL_CALLS,
    COMPONENT_CRASHES,
    SESSION_CRASHES,
    EVENTS_QUARANTINED,
    BACKGROUND_FAILURES,
)


class CallFigures(Protocol):
    """What the metrics read of one model call (the store's ModelCallRecord has them)."""

    @property
    def outcome(self) -> str: ...
    @property
    def latency_s(self) -> float: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...


def record_model_call(record: CallFigures) -> None:
    outcome = record.outcome.split(":", 1)[0]  # "error: <detail>" → "error"
    MODEL_CALLS.inc(outcome=outcome)
    if outcome == "ok":
        MODEL_LATENCY.observe(record.latency_s)
    MODEL_TOKENS.inc(record.prompt_tokens, type="prompt")
    MODEL_TOKENS.inc(record.completion_tokens, type="completion")
    MODEL_TOKENS.inc(record.cached_tokens, type="cached")
    if record.prompt_tokens > 0:
        MODEL_CACHED_SHARE.observe(cached_share(record))


def cached_share(record: CallFigures) -> float:
    """The share of the call's input read from the prompt cache (0 when it had no input)."""
    if record.prompt_tokens <= 0:
        return 0.0
    return min(1.0, record.cached_tokens / record.prompt_tokens)
