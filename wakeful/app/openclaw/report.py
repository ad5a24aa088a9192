"""The import's report: one line per item, carried over, changed or not carried over.

A line names the item and where it went or why not; it never holds a secret's value
(tokens and keys are named by the key that held them and the file they went to).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    CARRIED = "carried over"
    CHANGED = "changed"
    DROPPED = "not carried over"


@dataclass(frozen=True)
class Item:
    outcome: Outcome
    what: str  # the OpenClaw key or file, e.g. channels.telegram or SOUL.md
    detail: str  # where it went, what changed, or why it could not

    def line(self) -> str:
        """One line; control characters a file or folder name may hold (a terminal escape)
        are shown as ``?``."""
        text = f"{self.outcome.value:<17} {self.what}: {self.detail}"
        return "".join("?" if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c for c in text)


@dataclass
class Report:
    items: list[Item] = field(default_factory=list)

    def carried(self, what: str, detail: str) -> None:
        self.items.append(Item(Outcome.CARRIED, what, detail))

    def changed(self, what: str, detail: str) -> None:
        self.items.append(Item(Outcome.CHANGED, what, detail))

    def dropped(self, what: str, detail: str) -> None:
        self.items.append(Item(Outcome.DROPPED, what, detail))

    def count(self, outcome: Outcome) -> int:
        return sum(item.outcome is outcome for item in self.items)

    @property
    def partial(self) -> bool:
        return self.count(Outcome.DROPPED) > 0
