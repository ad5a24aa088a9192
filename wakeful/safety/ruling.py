"""What one step of the policy chain says about a call, and the call it judges."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from wakeful.core.effects import CONSEQUENTIAL, Effect, Reach
from wakeful.core.taint import Taint


class Verdict(StrEnum):
    ALLOW = "allow"  # run it
    ASK = "ask"  # the owner decides (an approval)
    DENY = "deny"  # refused; the reason goes back to the model as the tool result


@dataclass(frozen=True)
class Ruling:
    verdict: Verdict
    reason: str
    step: str  # which step said so: confinement, allowlist, taint_gate, reviewer, breaker


@dataclass(frozen=True)
class PolicyCall:
    """One tool call as the chain sees it: structured fields only, never the model's text."""

    session: str
    call_id: str
    tool: str
    effect: Effect
    arguments: dict[str, Any]
    reach: Reach
    taint: Taint | None
    workspace: Path
    output_dir: Path

    @property
    def consequential(self) -> bool:
        return self.effect in CONSEQUENTIAL


class PolicyStep(Protocol):
    """One small unit of the chain with one job. ``None``: no opinion, ask the next."""

    name: str

    async def check(self, call: PolicyCall) -> Ruling | None: ...
