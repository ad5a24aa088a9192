"""The daemon's safety parts, built once from ``[safety]`` and connected at start.

Kept in one place so the lifespan only says "build the policy, guard the
registry, run the approvals".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wakeful.core.approvals import Approval, ApprovalEffects, Approvals
from wakeful.core.session_taint import SessionTaints
from wakeful.kernel.trust import ResultTrust
from wakeful.safety.allowlist_step import Allowlist
from wakeful.safety.breaker import DenialBreaker
from wakeful.safety.chain import PolicyChain
from wakeful.safety.config import SafetySection
from wakeful.safety.confine_step import WorkspaceConfinement
from wakeful.safety.reviewer_step import ModelReviewer, ReviewModel, RuleReviewer
from wakeful.safety.ruling import PolicyStep
from wakeful.safety.scope_step import ScopeStep, ToolScope
from wakeful.safety.standing_step import StandingInstructions
from wakeful.safety.taint_gate_step import TaintGate
from wakeful.store.base import ChannelState


@dataclass(frozen=True)
class Safety:
    chain: PolicyChain
    approvals: Approvals
    taints: SessionTaints
    breaker: DenialBreaker


def build_safety(
    settings: SafetySection,
    state: ChannelState,
    *,
    data_dir: Path,
    extra_steps: list[PolicyStep] | None = None,
    review_model: ReviewModel | None = None,
    tool_scope: ToolScope | None = None,
    skill_roots: Sequence[Path] = (),
    mcp_prefixes: Sequence[str] = (),
    approval_effects: ApprovalEffects | None = None,
    shared: bool = False,
) -> Safety:
    """``review_model``: the model reviewer's model (``[safety] reviewer_model``); it
    judges what the rules let through, after them. ``tool_scope``: the sessions
    restricted to some tools (subagents), checked before every other step.
    ``skill_roots``: where skills live; no tool call may write there.
    ``mcp_prefixes``: the configured MCP servers' tool-name prefixes; their tools vouch per result
    (wakeful/kernel/trust.py: untrusted unless ``[[mcp.servers]] trusted = true``).
    ``approval_effects``: what the daemon does with a decision; ``shared``: several
    daemons share the approvals (a fleet)."""
    taints = SessionTaints(state)
    breaker = DenialBreaker(state, trip_after=settings.breaker_denials)
    approvals = Approvals(
        state,
        timeout_s=settings.approval_timeout_s,
        effects=approval_effects,
        count_denial=breaker.count_denial,
        shared=shared,
    )
    steps: list[PolicyStep] = [
        *([ScopeStep(tool_scope)] if tool_scope is not None else []),
        WorkspaceConfinement(),
        StandingInstructions(skill_roots),
        Allowlist(
            email_allow=settings.email_allow,
            http_allow=settings.http_allow,
            shell_allow=settings.shell_allow,
        ),
        TaintGate(),
        RuleReviewer(daemon_dirs=[data_dir, Path("/etc/wakeful")]),
        *(
            [ModelReviewer(review_model, budget_s=settings.reviewer_budget_ms / 1000)]
            if review_model is not None
            else []
        ),
        *(extra_steps or []),
    ]
    chain = PolicyChain(
        steps,
        taints=taints,
        breaker=breaker,
        approvals=approvals,
        result_trust=ResultTrust(mcp_prefixes=tuple(mcp_prefixes)),
    )
    return Safety(chain=chain, approvals=approvals, taints=taints, breaker=breaker)


# A chat notice shows this much of a call's effect; the rest is named, not dropped.
NOTICE_EFFECT_MAX = 3000


def approval_notice(approval: Approval) -> str:
    """What the owner is told in chat when a call or a question waits for them."""
    if approval.kind == "input":
        return (
            f"The agent asks ({approval.id}, session {approval.session}): {approval.reason}\n"
            f'Reply "answer {approval.id} <your answer>" (or wakeful answer {approval.id} '
            f'"..."); if nobody answers by {approval.expires_at}: {approval.default}'
        )
    if approval.kind == "question":
        return (
            f"The agent asks for your approval ({approval.id}, session {approval.session}): "
            f'{approval.reason}\nReply "approve {approval.id}" or "deny {approval.id} '
            f'<reason>"; it is no if nobody decides by {approval.expires_at}.'
        )
    tainted = (
        f"\nThe session read untrusted input: {approval.tainted_by}"
        if (approval.tainted_by)
        else ""
    )
    return (
        f"Approval needed ({approval.id}) in session {approval.session}: {approval.tool}\n"
        f"{notice_effect(approval)}\nWhy: {approval.reason}{tainted}\n"
        f'Reply "approve {approval.id}" or "deny {approval.id} <reason>" '
        f"(or wakeful approve {approval.id}); it is denied at {approval.expires_at} if "
        "nobody decides."
    )


def notice_effect(approval: Approval, limit: int = NOTICE_EFFECT_MAX) -> str:
    """The call's effect for a chat notice: whole, or, past ``limit`` characters, its
    head and a line saying how much is not shown and where the whole of it is — never
    a silent cut (a "; curl …" after a run of padding must not hide)."""
    effect = approval.effect or f"{approval.tool} {approval.arguments}"
    if len(effect) <= limit:
        return effect
    hidden = len(effect) - limit
    return (
        f"{effect[:limit]}\n[… {hidden} more characters of this call are NOT shown here. "
        f"Read all of it before you decide: `wakeful approvals` or the web page's "
        f"approval {approval.id}.]"
    )
