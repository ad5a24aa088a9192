"""`wakeful usage [--by day|session|source|model] [--days N]`: what the model calls
used — tokens in and out, the cached share of the input, and dollars where
``[budget.prices]`` names the model's price."""

from __future__ import annotations

import argparse
from typing import Any

from wakeful.cli.client import DaemonClient

GROUPINGS = ("day", "session", "source", "model")  # as the daemon's /api/usage takes them
NO_PRICE = 'cost: - where [budget.prices."MODEL"] has no price for the model (docs/budgets.md)'


def add_arguments(sub: Any, add: Any) -> None:
    usage = add(sub, "usage", "tokens in/out, cached share and cost of the model calls")
    usage.add_argument("--by", choices=GROUPINGS, default="day", help="one row per (default: day)")
    usage.add_argument("--days", type=int, default=30, help="the last N days (default: 30)")


def run(args: argparse.Namespace, client: DaemonClient) -> int:
    report = client.get_json("/api/usage", {"by": args.by, "days": args.days})
    rows = [*report["rows"], report["total"]]
    header = [args.by, "calls", "tokens in", "tokens out", "cached", "cost"]
    table = [header] + [
        [
            str(row["key"]),
            f"{row['calls']:,}",
            f"{row['tokens_in']:,}",
            f"{row['tokens_out']:,}",
            f"{row['cached_share']:.0%}",
            f"${row['cost_usd']:.4f}" if row["cost_usd"] is not None else "-",
        ]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print(f"model calls of the last {report['days']} days, by {args.by}")
    for number, cells in enumerate(table):
        if number == len(table) - 1:
            print("  ".join("-" * w for w in widths))
        first = cells[0].ljust(widths[0])
        print("  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))]))
    if any(row["cost_usd"] is None for row in rows):
        print(NO_PRICE)
    return 0
