"""`wakeful budget`: spend against every cap; `wakeful budget set CAP AMOUNT` changes one."""

from __future__ import annotations

import argparse
from typing import Any

from wakeful.cli.client import CliError, DaemonClient

NOT_CONFIGURED = (
    "no [budget] is configured: add caps to the [budget] section (docs/budgets.md) and "
    "restart the daemon"
)


def add_arguments(sub: Any, add: Any) -> None:
    """The command, under the main parser's subcommands (``add(sub, name, help)``)."""
    budget = add(sub, "budget", "spending caps: what was spent against each today / this month")
    actions = budget.add_subparsers(dest="action", metavar="ACTION")
    change = add(actions, "set", "change one cap now (kept across restarts); 0 is no cap")
    change.add_argument("cap", help="e.g. daily_tokens, source_daily_tokens.webhook, daily_usd")
    change.add_argument("amount", type=float, help="tokens, or US dollars for *_usd caps")


def run(args: argparse.Namespace, client: DaemonClient) -> int:
    if getattr(args, "action", None) == "set":
        if args.amount < 0:
            raise CliError("the amount must be 0 (no cap) or more")
        answer = client.post_json("/api/budget/caps", {"cap": args.cap, "amount": args.amount})
        print(f"{args.cap} is now {_amount(args.amount)}" + ("" if args.amount else " (no cap)"))
    else:
        found = client.get_json_if_served("/api/budget")
        if found is None:
            raise CliError(NOT_CONFIGURED)
        answer = found
    for row in answer["caps"]:
        print(cap_line(row))
    return 0


def cap_line(row: dict[str, Any]) -> str:
    """``source_daily_tokens.webhook  webhook  day:2026-12-04  12345 of 30000 tokens``."""
    unit = row.get("unit", "tokens")
    used, limit = float(row.get("used", 0)), float(row.get("limit", 0))
    cap = f"{_money(used)} of {_money(limit)}" if unit == "USD" else f"{used:.0f} of {limit:.0f}"
    if not limit:
        cap = (_money(used) if unit == "USD" else f"{used:.0f}") + " (no cap)"
    held = float(row.get("held", 0))
    extra = f", {held:.0f} held by calls in flight" if held and unit != "USD" else ""
    state = "  REACHED: calls wait" if row.get("reached") else ""
    return f"{row['cap']}  {row['for']}  {row['window']}  {cap} {unit}{extra}{state}"


def _money(value: float) -> str:
    return f"${value:.4f}"


def _amount(value: float) -> str:
    return f"{value:g}"
