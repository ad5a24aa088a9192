"""``wakeful pairing``: let an unknown chat user in (or keep them out)."""

from __future__ import annotations

import argparse
import time
from typing import Any
from urllib.parse import quote

from wakeful.channels.chat.platforms import PLATFORMS
from wakeful.cli.client import DaemonClient


def show_pending(client: DaemonClient) -> int:
    pending: list[dict[str, Any]] = client.get_json("/api/pairing")["pending"]
    if not pending:
        print("no pairing requests are waiting")
        return 0
    for request in pending:
        who = request["user_id"]
        if request.get("user_name"):
            who = f"{request['user_name']} ({who})"
        age = _age(time.time() - float(request["requested_at"]))
        print(
            f"{request['platform']:<9} {request['code']}  {who} on {request['name']}, {age} ago"
            f"  → wakeful pairing approve {request['platform']} {request['code']}"
        )
    return 0


def decide(client: DaemonClient, platform: str, code: str, decision: str) -> int:
    path = f"/api/pairing/{quote(platform, safe='')}/{quote(code, safe='')}"
    answer = client.post_json(path, {"decision": decision})["request"]
    who = answer.get("user_name") or answer["user_id"]
    if decision == "approve":
        print(f"{who} on {platform} ({answer['name']}) is let in; they were told so")
    else:
        print(f"{who} on {platform} ({answer['name']}) is kept out; they will not be answered")
    return 0


def add_arguments(parser: argparse.ArgumentParser, sub: Any) -> None:
    """``pairing list | approve PLATFORM CODE | deny PLATFORM CODE`` under ``parser``."""
    for name, help_text in (
        ("approve", "let the chat user with this pairing code in"),
        ("deny", "keep the chat user with this pairing code out (no more replies)"),
    ):
        action = sub(name, help_text)
        action.add_argument("platform", choices=PLATFORMS, help="the chat platform")
        action.add_argument("code", help="the code the user was sent, e.g. ABCD-EFGH")
    sub("list", "pending pairing requests")


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 5400:
        return f"{int(seconds // 60)} min"
    return f"{seconds / 3600:.1f} h"
