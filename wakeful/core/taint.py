"""Taint: which untrusted input entered a session's trajectory.

A session is tainted the moment third-party text reaches its model: an
untrusted event, or a tool result that carries someone else's words (an
e-mail read, a page fetched, a file the agent did not write). Taint is kept
in the store with the session, survives restarts, and is cleared only by the
owner (``wakeful taint clear SESSION``) or a new session. What a tainted run
creates (timers, shell tasks) carries the taint into the events it raises.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

# Enough to say where the session's taint came from; more only repeats itself.
MAX_SOURCES = 20


@dataclass(frozen=True)
class TaintSource:
    """One untrusted input: what it was and when it entered."""

    what: str  # "email from bob@example.net", "fetch_url https://…", "webhook github"
    ref: str  # the event id or the tool call id
    at: str  # ISO time it entered the trajectory (the daemon's clock)

    def describe(self) -> str:
        # Long event ids (a webhook body's hash) say nothing to a person; the start
        # is enough to find it in `wakeful events`.
        ref = self.ref if len(self.ref) <= 40 else f"{self.ref[:32]}…"
        return f"{self.what} ({ref})"


@dataclass(frozen=True)
class Taint:
    sources: tuple[TaintSource, ...]

    @property
    def since(self) -> str:
        return self.sources[0].at

    def summary(self) -> str:
        """One line for approvals and status: the first and newest sources."""
        first = self.sources[0].describe()
        if len(self.sources) == 1:
            return first
        return f"{first} and {len(self.sources) - 1} more (newest: {self.sources[-1].describe()})"

    def with_source(self, source: TaintSource) -> Taint:
        if any(s.ref == source.ref for s in self.sources):
            return self
        kept = (*self.sources, source)
        if len(kept) > MAX_SOURCES:  # the first (what tainted it) and the newest
            kept = (kept[0], *kept[-(MAX_SOURCES - 1) :])
        return Taint(kept)

    def to_json(self) -> str:
        return json.dumps({"sources": [asdict(s) for s in self.sources]})

    @classmethod
    def from_json(cls, raw: str) -> Taint | None:
        try:
            data: Any = json.loads(raw)
            sources = tuple(TaintSource(**item) for item in data["sources"])
        except (ValueError, KeyError, TypeError):
            return None
        return cls(sources) if sources else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "summary": self.summary(),
            "sources": [asdict(s) for s in self.sources],
        }


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
