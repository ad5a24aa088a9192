"""`wakeful context reset SESSION`: let a session compact again after its breaker opened."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from wakeful.cli.client import DaemonClient


def add_arguments(sub: Any, add: Any) -> None:
    """The command, under the main parser's subcommands (``add(sub, name, help)``)."""
    context = add(sub, "context", "a session's context budget: reset its compaction breaker")
    actions = context.add_subparsers(dest="action", metavar="ACTION", required=True)
    reset = add(actions, "reset", "let a session ask the model for compactions again")
    reset.add_argument("session", help="session name, e.g. main")


def run(args: argparse.Namespace, client: DaemonClient) -> int:
    session = args.session
    answer = client.post_json(f"/api/sessions/{quote(session, safe='')}/context/reset", {})
    if answer["had_failures"]:
        print(f"session {session}'s compaction breaker is reset: it may compact again")
    else:
        print(f"session {session} had no failed compactions")
    return 0
