"""``wakeful approvals | approve | deny | taint | breaker``: the owner's safety commands."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

from wakeful.cli.client import DaemonClient


def show_approvals(client: DaemonClient, *, everything: bool) -> int:
    found = client.get_json_list("/api/approvals?all=1" if everything else "/api/approvals")
    if not found:
        print("no calls are waiting for your approval" if not everything else "no approvals")
        return 0
    for approval in found:
        print(_line(approval))
    return 0


def _line(approval: dict[str, Any]) -> str:
    arguments = json.dumps(approval["arguments"], ensure_ascii=False)
    if len(arguments) > 200:
        arguments = arguments[:200] + "…"
    head = f"{approval['id']}  {approval['session']}  {approval['tool']} {arguments}"
    if approval["state"] == "pending":
        effect = approval.get("effect") or ""  # in full: it is what the owner approves
        tail = (
            "".join(f"\n    | {line}" for line in effect.splitlines())
            + f"\n    why: {approval['reason']}"
            + (f"\n    tainted by: {approval['tainted_by']}" if approval.get("tainted_by") else "")
            + f"\n    {_unless(approval)}"
        )
    else:
        why = f" ({approval['decided_reason']})" if approval.get("decided_reason") else ""
        who = f"{approval['decision']} by {approval['decided_by']}"
        tail = f"\n    {who} at {approval['decided_at']}{why}"
    return head + tail


def _unless(approval: dict[str, Any]) -> str:
    at, identifier = approval["expires_at"], approval["id"]
    if approval.get("kind") == "input":
        return (
            f"if unanswered by {at}, the default applies ({approval.get('default')}):"
            f" wakeful answer {identifier} TEXT  |  wakeful deny {identifier}"
        )
    commands = f"wakeful approve {identifier}  |  wakeful deny {identifier}"
    return f"denied at {at} unless you decide: {commands}"


def decide(client: DaemonClient, approval_id: str, decision: str, reason: str) -> int:
    path = f"/api/approvals/{quote(approval_id, safe='')}"
    field = "answer" if decision == "answer" else "reason"
    answer = client.post_json(path, {"decision": decision, field: reason})
    if decision == "answer":
        print(f"answered {answer['id']}: session {answer['session']} gets your answer")
    elif decision == "approve" and answer.get("kind") == "question":
        print(f"approved {answer['id']}: session {answer['session']} is told yes")
    elif decision == "approve":
        print(
            f"approved {answer['id']}: {answer['tool']} runs once now; its result goes to "
            f"session {answer['session']}"
        )
    else:
        print(
            f"denied {answer['id']}: {answer['tool']} will not run; session "
            f"{answer['session']} is told why"
        )
    return 0


def show_taint(client: DaemonClient) -> int:
    overview = client.get_json("/api/safety")
    tainted: dict[str, Any] = overview["tainted"]
    if not tainted:
        print("no session is tainted")
    for session, taint in tainted.items():
        print(f"{session}: tainted since {taint['since']} by {taint['summary']}")
    return 0


def clear_taint(client: DaemonClient, session: str) -> int:
    answer = client.post_json(f"/api/sessions/{quote(session, safe='')}/taint/clear", {})
    if answer["was_tainted"]:
        print(
            f"session {session} is trusted again: its consequential calls no longer wait "
            "for approval (the untrusted text is still in its history)"
        )
    else:
        print(f"session {session} was not tainted")
    return 0


def reset_breaker(client: DaemonClient, session: str) -> int:
    answer = client.post_json(f"/api/sessions/{quote(session, safe='')}/breaker/reset", {})
    print(
        f"session {session}'s circuit breaker is reset (it had {answer['denials_before']} denials)"
    )
    return 0


def add_arguments(sub: Any, add: Any) -> None:
    """The commands, under the main parser's subcommands (``add(sub, name, help)``)."""
    approvals = add(sub, "approvals", "tool calls waiting for your approval")
    approvals.add_argument("--all", action="store_true", help="also the decided ones")
    for name, help_text in (
        ("approve", "let a waiting tool call run (once)"),
        ("deny", "refuse a waiting tool call; the agent is told why"),
    ):
        action = add(sub, name, help_text)
        action.add_argument("approval_id", metavar="ID", help="the approval's id, e.g. k3fwz2qp")
        action.add_argument("--reason", default="", help="why (the agent sees it)")
    answer = add(sub, "answer", "answer the agent's question (request_human_input)")
    answer.add_argument("approval_id", metavar="ID", help="the request's id, e.g. k3fwz2qp")
    answer.add_argument("text", help="your answer")
    taint = add(sub, "taint", "which sessions read untrusted input; clear one")
    taint_actions = taint.add_subparsers(dest="action", metavar="ACTION")
    clear = add(taint_actions, "clear", "trust the session again (your explicit decision)")
    clear.add_argument("session", help="session name, e.g. main")
    breaker = add(sub, "breaker", "the circuit breaker of repeated denials")
    breaker_actions = breaker.add_subparsers(dest="action", metavar="ACTION", required=True)
    reset = add(breaker_actions, "reset", "let a session's consequential calls through again")
    reset.add_argument("session", help="session name, e.g. main")


def run(args: argparse.Namespace, client: DaemonClient) -> int:
    match args.command:
        case "approvals":
            return show_approvals(client, everything=args.all)
        case "approve" | "deny":
            return decide(client, args.approval_id, args.command, args.reason)
        case "answer":
            return decide(client, args.approval_id, "answer", args.text)
        case "taint":
            if getattr(args, "action", None) == "clear":
                return clear_taint(client, args.session)
            return show_taint(client)
        case _:
            return reset_breaker(client, args.session)
