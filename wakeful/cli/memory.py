"""`wakeful memory`: the entries the agent saved, with their provenance; `approve` one
waiting for review (saved while the session had read a third party's words) into
memory, or `forget` one (out of every file)."""

from __future__ import annotations

import argparse
from typing import Any

from wakeful.cli.client import CliError, DaemonClient

NOT_SERVED = "memory is off: [memory] enabled = false in the config (docs/memory.md)"
PREVIEW_CHARS = 60


def add_arguments(sub: Any, add: Any) -> None:
    """The command, under the main parser's subcommands (``add(sub, name, help)``)."""
    memory = add(sub, "memory", "what the agent remembers: list, show, approve, forget entries")
    actions = memory.add_subparsers(dest="action", metavar="ACTION")
    add(actions, "list", "every entry, newest first, and how many wait for review")
    for name, text in (
        ("show", "one entry: its text, why, which session and event, whether tainted"),
        ("approve", "an entry waiting for review goes into memory (the digest, trusted)"),
        ("forget", "take an entry out of every memory file"),
    ):
        add(actions, name, text).add_argument("id", help="the entry's id, e.g. mem-1a2b3c4d")


def run(args: argparse.Namespace, client: DaemonClient) -> int:
    action = getattr(args, "action", None) or "list"
    listing = client.get_json_if_served("/api/memory")
    if listing is None:
        raise CliError(NOT_SERVED)
    if action == "list":
        print_listing(listing)
        return 0
    entry_id = client.segment(args.id)
    if action == "show":
        entry = client.get_json(f"/api/memory/{entry_id}")
        for key in ("id", "status", "kind", "text", "reason", "file", "session", "event_id"):
            print(f"{key + ':':10} {entry.get(key) or '-'}")
        print(f"{'tainted:':10} {entry.get('tainted') or 'no'}")
        print(f"{'saved:':10} {entry['created_at']}")
        if entry.get("decided_at"):
            print(f"{'decided:':10} {entry['decided_at']}")
        return 0
    entry = client.post_json(f"/api/memory/{entry_id}/{action}")
    done = {"approve": "approved: it is in", "forget": "forgotten: it was taken out of"}[action]
    print(f"{entry['id']} {done} {entry['file']} ({entry['status']})")
    return 0


def print_listing(listing: dict[str, Any]) -> None:
    entries: list[dict[str, Any]] = listing["entries"]
    waiting = int(listing.get("review", 0))
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    print(f"{count} in {listing['folder']}; {waiting} waiting for review")
    for entry in entries:
        text = str(entry["text"])
        if len(text) > PREVIEW_CHARS:
            text = text[: PREVIEW_CHARS - 1] + "…"
        flag = "REVIEW" if entry["status"] == "review" else entry["status"]
        print(f"{entry['id']}  {flag:9} {entry['kind']:4}  {entry['created_at'][:10]}  {text}")
    if waiting:
        print("saved while tainted: `wakeful memory show ID`, then `approve ID` or `forget ID`")
