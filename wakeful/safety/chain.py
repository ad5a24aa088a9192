"""The one policy chain every tool call passes (SPEC §8).

In order: workspace confinement → allowlist → taint gate → reviewer →
approval. Each step is a small unit with one job (``*_step.py``); a step may
deny (the reason goes back to the model as the tool result), allow outright
(the allowlist), ask (the owner decides; later steps may still deny) or have
no opinion. Before the steps, the circuit breaker refuses consequential
calls of a session that was denied too often. The chain decides from the
tool's declared effect, the call's structured arguments and the session's
taint — never from the model's free text.

The tool registry calls :meth:`PolicyChain.admit` before running a tool and
:meth:`PolicyChain.observe` after, which is where results taint the session:
all of them, except those wakeful/kernel/trust.py declares our own.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import structlog
from pydantic import BaseModel

from wakeful.core.approvals import Approvals
from wakeful.core.effects import Effect, Reach
from wakeful.core.session_taint import SessionTaints
from wakeful.core.taint import TaintSource, now_iso
from wakeful.core.tool import Tool, ToolContext, ToolOutput
from wakeful.core.trajectory.placeholders import awaiting_approval_placeholder
from wakeful.kernel import metrics
from wakeful.kernel.trust import ResultTrust
from wakeful.safety.breaker import DenialBreaker
from wakeful.safety.call_effect import effect_of_call
from wakeful.safety.ruling import PolicyCall, PolicyStep, Ruling, Verdict

log = structlog.get_logger(__name__)


async def reach_of(tool: Tool, args: BaseModel) -> Reach:
    """What the call touches, as the tool reads its own structured arguments."""
    reach = getattr(tool, "reach", None)
    if reach is None:
        return Reach()
    found: Reach = await reach(args)
    return found


def effect_of(tool: Tool, args: BaseModel) -> Effect:
    """What the call can do: the tool's effect, unless its calls differ by their arguments
    (connect_channel: an http_check reaches the network, a file watch does not), when the
    tool says it of this call."""
    per_call = getattr(tool, "call_effect", None)
    if per_call is None:
        return tool.effect
    found: Effect = per_call(args)
    return found


class PolicyChain:
    def __init__(
        self,
        steps: Sequence[PolicyStep],
        *,
        taints: SessionTaints,
        breaker: DenialBreaker,
        approvals: Approvals,
        result_trust: ResultTrust | None = None,
    ) -> None:
        self.steps = list(steps)
        self.result_trust = result_trust or ResultTrust()
        self.taints = taints
        self.breaker = breaker
        self.approvals = approvals

    async def rule(self, call: PolicyCall) -> Ruling:
        """The chain's verdict on one call (no side effects)."""
        if call.consequential and await self.breaker.tripped(call.session):
            count = await self.breaker.denials(call.session)
            return Ruling(
                Verdict.DENY,
                f"this session's circuit breaker is tripped after {count} denied calls, so its "
                f"consequential calls are refused until the owner resets it (wakeful breaker "
                f"reset {call.session}); tell the user what you wanted to do instead",
                "breaker",
            )
        asked: Ruling | None = None
        for step in self.steps:
            ruling = await step.check(call)
            if ruling is None:
                continue
            if ruling.verdict is not Verdict.ASK:
                return ruling
            asked = asked or ruling
        return asked or Ruling(Verdict.ALLOW, "no step objected", "chain")

    async def prepare(self, ctx: ToolContext) -> ToolContext:
        """The context with the session's taint, which what the call creates carries on."""
        taint = await self.taints.get(ctx.session)
        return ctx if taint is ctx.taint else dataclasses.replace(ctx, taint=taint)

    async def admit(
        self, tool: Tool, args: BaseModel, raw_arguments: str, ctx: ToolContext
    ) -> ToolOutput | None:
        """None: run it. Otherwise the result to give the model instead of running it."""
        call = PolicyCall(
            session=ctx.session,
            call_id=ctx.call_id,
            tool=tool.name,
            effect=effect_of(tool, args),
            arguments=_arguments(args),
            reach=await reach_of(tool, args),
            taint=ctx.taint,
            workspace=ctx.workspace,
            output_dir=ctx.output_dir,
        )
        ruling = await self.rule(call)
        metrics.POLICY_VERDICTS.inc(verdict=ruling.verdict.value, step=ruling.step)
        if ruling.verdict is Verdict.ALLOW:
            return None
        if ruling.verdict is Verdict.DENY:
            return await self._deny(call, ruling)
        approval = await self.approvals.request(
            session=call.session,
            call_id=call.call_id,
            tool=call.tool,
            arguments=raw_arguments,
            reason=ruling.reason,
            tainted_by=call.taint.summary() if call.taint else None,
            effect=await effect_of_call(tool, args, raw_arguments, ctx),
        )
        text = awaiting_approval_placeholder(
            tool=call.tool,
            call_id=call.call_id,
            approval_id=approval.id,
            reason=ruling.reason,
            requested_at=approval.requested_at,
            expires_at=approval.expires_at,
        )
        return ToolOutput(text, data={"approval_id": approval.id, "awaiting_approval": True})

    async def _deny(self, call: PolicyCall, ruling: Ruling) -> ToolOutput:
        log.warning(
            "tool call denied",
            tool=call.tool,
            step=ruling.step,
            reason=ruling.reason,
            session=call.session,
        )
        text = f"denied by the safety policy ({ruling.step}): {ruling.reason}."
        if ruling.step != "breaker" and call.effect is not Effect.READ:
            count = await self.breaker.count_denial(call.session)
            if count >= self.breaker.trip_after:
                text += (
                    f" This was denial {count}: the session's circuit breaker has tripped and "
                    "its consequential calls are now refused until the owner resets it."
                )
        return ToolOutput(text, is_error=True, data={"denied": True, "step": ruling.step})

    async def observe(self, tool: Tool, output: ToolOutput, ctx: ToolContext) -> None:
        """Every result taints the session unless wakeful/kernel/trust.py declares the tool's
        results our own, or the tool vouches for this one (taint by construction)."""
        what = self.result_trust.taint_of(tool.name, output.untrusted_source)
        if what is not None:
            await self.taints.mark(
                ctx.session, TaintSource(what=what, ref=ctx.call_id, at=now_iso())
            )


def _arguments(args: BaseModel) -> dict[str, Any]:
    dumped: Any = json.loads(args.model_dump_json())
    return dumped if isinstance(dumped, dict) else {}
