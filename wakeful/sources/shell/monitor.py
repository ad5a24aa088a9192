"""Output patterns that wake the agent, and the limit that keeps them polite.

A pattern is a substring or a regular expression; a matching line becomes a
``shell.output`` event. A chatty process could match thousands of lines a
second, so at most ``max_events`` lines per ``window_s`` become events; the
rest are counted, and the count is reported — in the next event, in a
summary when the window ends, and in the exit event — never dropped quietly.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field


class PatternError(ValueError):
    """A pattern the model gave cannot be used; the message says why."""


@dataclass(frozen=True)
class Pattern:
    text: str
    regex: bool
    _compiled: re.Pattern[str] | None = field(default=None, compare=False)
    # The connect_channel subscription that set it: its events carry that id.
    tag: str | None = None

    @classmethod
    def make(cls, text: str, *, regex: bool, tag: str | None = None) -> Pattern:
        if not text:
            raise PatternError("an empty pattern would match every line; give some text")
        if not regex:
            return cls(text, False, tag=tag)
        try:
            return cls(text, True, re.compile(text), tag)
        except re.error as exc:
            raise PatternError(
                f"{text!r} is not a valid Python regular expression ({exc}); fix it, or "
                "pass regex=false to match it as plain text"
            ) from None

    def matches(self, line: str) -> bool:
        if self._compiled is not None:
            return self._compiled.search(line) is not None
        return self.text in line

    def describe(self) -> str:
        return f"regex {self.text!r}" if self.regex else repr(self.text)


class Patterns:
    """The patterns a task is monitored for (added to while it runs)."""

    def __init__(self, limit: int = 32) -> None:
        self._items: list[Pattern] = []
        self._limit = limit

    def add(self, new: list[Pattern]) -> list[Pattern]:
        """Adds the patterns not already present; returns the whole list."""
        for pattern in new:
            if pattern in self._items:
                continue
            if len(self._items) >= self._limit:
                raise PatternError(
                    f"a task can be monitored for at most {self._limit} patterns; "
                    "combine them into one regular expression (a|b|c)"
                )
            self._items.append(pattern)
        return list(self._items)

    def remove_tagged(self, tag: str) -> None:
        """Drop the patterns a subscription set (it was disconnected)."""
        self._items = [p for p in self._items if p.tag != tag]

    def first_match(self, line: str) -> Pattern | None:
        return next((p for p in self._items if p.matches(line)), None)

    def describe(self) -> list[str]:
        return [p.describe() for p in self._items]

    def __bool__(self) -> bool:
        return bool(self._items)


@dataclass
class RateLimiter:
    """A fixed window: ``max_events`` per ``window_s``; counts what it refuses."""

    max_events: int
    window_s: float
    clock: Callable[[], float] = time.monotonic
    window_started: float = float("-inf")
    sent_in_window: int = 0
    suppressed_pending: int = 0  # refused since the last event that reported them
    suppressed_total: int = 0
    last_suppressed_line: str = ""
    last_suppressed_no: int = 0

    def allow(self) -> bool:
        now = self.clock()
        if now - self.window_started >= self.window_s:
            self.window_started, self.sent_in_window = now, 0
        if self.sent_in_window < self.max_events:
            self.sent_in_window += 1
            return True
        return False

    def refuse(self, line: str, line_no: int) -> None:
        self.suppressed_pending += 1
        self.suppressed_total += 1
        self.last_suppressed_line, self.last_suppressed_no = line, line_no

    def take_pending(self) -> int:
        """The refused count not yet reported, which is now reported."""
        pending, self.suppressed_pending = self.suppressed_pending, 0
        return pending

    def window_ends_in(self) -> float:
        return max(0.0, self.window_started + self.window_s - self.clock())
