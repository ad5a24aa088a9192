"""`wakeful events`: the newest page of the event log, paging back, or all of it,
each event with its routing decision and reason."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from wakeful.cli.client import CliError, DaemonClient


def show_events(client: DaemonClient, args: argparse.Namespace) -> int:
    """The newest page in time order (newest last, beside the prompt, where --follow
    continues), with a line saying how many older events there are and how to see them."""
    path = f"/api/sessions/{client.segment(args.session)}/events" if args.session else "/api/events"
    if args.all:
        after = _print_forward(client, path, 0, args.limit)
    else:
        params = {"newest": 1, "limit": args.limit, "before": args.before or 0}
        page = client.get_json(path, params)
        entries: list[dict[str, Any]] = page["events"]
        if entries and int(page.get("older", 0)):
            _note_older(int(page["older"]), int(entries[0]["seq"]), args)
        for entry in entries:
            print(_event_line(entry), flush=True)
        after = max([int(e["seq"]) for e in entries], default=0)
    if args.session and after == 0 and not args.before:
        require_session(client, args.session)
    while args.follow:
        # The log is small and local; a one-second poll keeps --follow simple.
        time.sleep(1.0)
        after = _print_forward(client, path, after, args.limit)
    return 0


def _print_forward(client: DaemonClient, path: str, after: int, limit: int) -> int:
    """Every event after ``after``, oldest first, page by page; the last seq printed."""
    while True:
        entries = client.get_json(path, {"after": after, "limit": limit})["events"]
        for entry in entries:
            print(_event_line(entry), flush=True)
            after = max(after, int(entry.get("seq", after)))
        if len(entries) < limit:
            return after


def _note_older(older: int, first_seq: int, args: argparse.Namespace) -> None:
    session = f" -s {args.session}" if args.session else ""
    print(
        f"({older} older event{'s' if older != 1 else ''} not shown: "
        f"`wakeful events{session} --before {first_seq}` for the previous page, --all for all)",
        file=sys.stderr,
        flush=True,
    )


def require_session(client: DaemonClient, session: str) -> None:
    """An unknown session is a mistake to name, not an empty answer."""
    known = sorted(client.get_json("/api/status").get("sessions") or {})
    if session not in known:
        listed = ", ".join(known) if known else "none yet"
        raise CliError(f"no session {session!r} on this daemon; known sessions: {listed}")


def _event_line(entry: dict[str, Any]) -> str:
    # Entries are flat (seq, kind, text, ...); a nested "event" is accepted too.
    inner = entry.get("event")
    event: dict[str, Any] = inner if isinstance(inner, dict) else entry
    raw_content = event.get("content")
    content: dict[str, Any] = raw_content if isinstance(raw_content, dict) else {}
    text = str(event.get("text") or content.get("subject") or content.get("text") or "")
    text = text.replace("\n", " ")
    if len(text) > 100:
        text = text[:99] + "…"
    when = event.get("occurred_at") or event.get("received_at") or ""
    fields = [str(entry.get("seq", "")), str(when)[:19], str(event.get("session", ""))]
    fields += [str(event.get("kind", "")), str(event.get("channel", ""))]
    if entry.get("status"):
        fields.append(f"[{_route(entry)}]")
    return "  ".join(fields) + (f"  {text}" if text else "")


def _route(entry: dict[str, Any]) -> str:
    """``status/strategy: reason`` — how the router decided, as the README promises."""
    route = str(entry["status"])
    if entry.get("strategy"):
        route += f"/{entry['strategy']}"
    reason = str(entry.get("reason") or "").replace("\n", " ")
    if reason:
        route += f": {reason if len(reason) <= 60 else reason[:59] + '…'}"
    return route
