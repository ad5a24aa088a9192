"""The three strategies (SPEC §5) and the router's verdict."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Strategy(StrEnum):
    CANCEL = "cancel"  # force a safe point now; re-invoke the model at once
    QUEUE = "queue"  # wait for the next safe point; appended with the rest of the batch
    PARALLEL = "parallel"  # answered at once by a side session; noted in the main trajectory


@dataclass(frozen=True)
class Decision:
    strategy: Strategy
    reason: str
    stop_tools: bool = False  # cancel only: stop running tools instead of leaving them running

    @classmethod
    def cancel(cls, reason: str, *, stop_tools: bool) -> Decision:
        return cls(Strategy.CANCEL, reason, stop_tools)

    @classmethod
    def queue(cls, reason: str) -> Decision:
        return cls(Strategy.QUEUE, reason)

    @classmethod
    def parallel(cls, reason: str) -> Decision:
        return cls(Strategy.PARALLEL, reason)
