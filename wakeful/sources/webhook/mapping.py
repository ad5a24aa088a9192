"""From a delivery's JSON to what the agent reads: templates, filters, event type.

A template is text with ``{dotted.path}`` placeholders into the JSON
(``"{action} on {repository.full_name}"``); list items are addressed by
index (``{commits.0.message}``) and ``{{`` / ``}}`` are literal braces. A
field that is absent renders as ``(missing)`` rather than failing the
delivery: the sender's schema is not ours to enforce.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wakeful.sources.webhook.config import HookFilter

MISSING_TEXT = "(missing)"
MAX_VALUE_CHARS = 300
MAX_RAW_TEXT_CHARS = 8000
# Built once: json.dumps with any keyword builds a new encoder per call (every delivery
# without a template is shown as its compact JSON).
_SHOW = json.JSONEncoder(ensure_ascii=False).encode
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z0-9_.-]+)\}")
_MISSING = object()


def lookup(payload: Any, path: str) -> Any:
    """The value at a dotted path, or the module's missing marker."""
    value = payload
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def is_missing(value: Any) -> bool:
    return value is _MISSING


def display(value: Any) -> str:
    if value is _MISSING:
        return MISSING_TEXT
    text = value if isinstance(value, str) else _SHOW(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def render_template(template: str, payload: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return display(lookup(payload, match.group(1)))

    return _TOKEN.sub(replace, template)


def raw_text(payload: Any) -> str:
    """With no template or preset: the JSON itself (a plain-text body as it is), cut to
    a readable size."""
    text = payload if isinstance(payload, str) else _COMPACT(payload)
    if len(text) <= MAX_RAW_TEXT_CHARS:
        return text
    return f"{text[:MAX_RAW_TEXT_CHARS]}… (cut; {len(text)} characters in all)"


def event_type(headers: Mapping[str, str], payload: Any) -> str | None:
    """GitHub's X-GitHub-Event, else a Standard Webhooks payload's ``type``."""
    header = headers.get("x-github-event")
    if header:
        return header
    kind = payload.get("type") if isinstance(payload, dict) else None
    return kind if isinstance(kind, str) else None


@dataclass(frozen=True)
class DeliveryFilter:
    """A hook's filters, compiled once: event types plus field conditions (all must hold)."""

    events: frozenset[str]
    conditions: tuple[HookFilter, ...]
    patterns: tuple[re.Pattern[str] | None, ...]

    @classmethod
    def build(cls, events: Sequence[str], conditions: Sequence[HookFilter]) -> DeliveryFilter:
        patterns = tuple(re.compile(c.pattern) if c.pattern else None for c in conditions)
        return cls(frozenset(events), tuple(conditions), patterns)

    def rejects(self, kind: str | None, payload: Any) -> str | None:
        """Why the delivery is filtered out, or None when it passes."""
        if self.events and kind not in self.events:
            return f"event type {kind!r} is not one of {sorted(self.events)}"
        for condition, pattern in zip(self.conditions, self.patterns, strict=True):
            value = lookup(payload, condition.field)
            if not _holds(condition, pattern, value):
                return f"field {condition.field!r} = {display(value)} does not pass the filter"
        return None


def _holds(condition: HookFilter, pattern: re.Pattern[str] | None, value: Any) -> bool:
    if value is _MISSING:
        return False
    if pattern is not None:
        return isinstance(value, str) and pattern.search(value) is not None
    if condition.one_of is not None:
        return any(_same(value, option) for option in condition.one_of)
    return _same(value, condition.equals)


def _same(value: Any, expected: Any) -> bool:
    # JSON true is not 1: compare bools only with bools.
    if isinstance(value, bool) or isinstance(expected, bool):
        return value is expected
    return bool(value == expected)
