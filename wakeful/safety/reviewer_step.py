"""Chain step 4, the reviewer: rules first, then (optionally) a model.

Both see only the structured call — tool name, effect, arguments — never the
model's free text, so nothing a sender wrote can argue with them. Rules:
a shell command that is destructive or names a secret or the daemon's own
files is denied. The optional model reviewer (``[safety] reviewer_model``)
judges what the rules let through, within a time budget; past it, or if it
fails, the call needs the owner's approval (never a silent allow).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import anyio
import structlog

from wakeful.core.effects import Effect
from wakeful.safety.ruling import PolicyCall, Ruling, Verdict
from wakeful.safety.shell_rules import destructive_reason, secret_reason

log = structlog.get_logger(__name__)


class RuleReviewer:
    name = "reviewer"

    def __init__(self, *, daemon_dirs: Sequence[Path] = ()) -> None:
        self._daemon_dirs = list(daemon_dirs)

    async def check(self, call: PolicyCall) -> Ruling | None:
        command = call.reach.command
        if call.effect is not Effect.SHELL or command is None:
            return None
        destructive = destructive_reason(command)
        if destructive is not None:
            return Ruling(
                Verdict.DENY,
                f"the command looks like {destructive}, which is never run; if it is really "
                "needed, explain why to the user and let them run it",
                self.name,
            )
        # The workspace usually lives inside the data directory: naming it is fine.
        outside_workspace = command.replace(str(call.workspace), "<workspace>")
        secret = secret_reason(outside_workspace, self._daemon_dirs)
        if secret is not None:
            return Ruling(
                Verdict.DENY,
                f"the command reads outside what the agent may touch: {secret}",
                self.name,
            )
        return None


class ReviewModel(Protocol):
    """Answers one review question with "allow", "ask" or "deny" and a reason."""

    async def review(self, question: str) -> tuple[str, str]: ...


REVIEW_INSTRUCTIONS = (
    "You review one tool call an autonomous agent wants to make for its owner. You see only "
    "the call's structured fields. Answer with one JSON object "
    '{"verdict": "allow" | "ask" | "deny", "reason": "..."}: deny what could leak secrets, '
    "destroy data or harm the owner; ask when a human should decide; allow what is routine."
)


class ModelReviewer:
    name = "reviewer_model"

    def __init__(self, model: ReviewModel, *, budget_s: float) -> None:
        self._model = model
        self._budget_s = budget_s

    async def check(self, call: PolicyCall) -> Ruling | None:
        if not call.consequential:
            return None
        question = json.dumps(
            {
                "tool": call.tool,
                "effect": call.effect.value,
                "arguments": call.arguments,
                "session_tainted": call.taint is not None,
            },
            sort_keys=True,
        )
        answer: tuple[str, str] | None = None
        with anyio.move_on_after(self._budget_s):
            try:
                answer = await self._model.review(question)
            except Exception as exc:  # the reviewer failing must never allow the call
                log.warning("model reviewer failed", error=str(exc), tool=call.tool)
                return Ruling(Verdict.ASK, f"the model reviewer failed ({exc})", self.name)
        if answer is None:
            return Ruling(
                Verdict.ASK, f"the model reviewer gave no answer in {self._budget_s:g} s", self.name
            )
        verdict, reason = answer
        if verdict == "allow":
            return None
        if verdict == "deny":
            return Ruling(Verdict.DENY, f"the reviewer denied it: {reason}", self.name)
        return Ruling(Verdict.ASK, f"the reviewer asks the owner: {reason}", self.name)
