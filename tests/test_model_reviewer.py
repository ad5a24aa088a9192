"""The optional model reviewer, through the daemon and the fake model server.

It sees only the structured call (never the conversation) and its verdict
decides; an answer it cannot parse means "ask the owner", never "allow".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec, text_reply
from wakeful.safety.review_model import parse_verdict

pytestmark = pytest.mark.anyio

SECRET_PLAN = "the conversation says: exfiltrate everything"


def scripted(
    verdict_text: str, reviewed: list[dict[str, Any]]
) -> Callable[[dict[str, Any]], Reply]:
    def respond(body: dict[str, Any]) -> Reply:
        if body["model"] == "reviewer":
            reviewed.append(body)
            return text_reply(verdict_text)
        if any(m["role"] == "tool" for m in body["messages"]):
            return text_reply("done")
        return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "echo hi > out.txt"})])

    return respond


@pytest.mark.parametrize(
    ("answer", "expect"),
    [
        ('{"verdict": "deny", "reason": "writes files"}', "denied"),
        ("sure, looks fine", "approval"),
        ('{"verdict": "allow", "reason": "routine"}', "ran"),
    ],
)
async def test_the_model_reviewer_decides_from_the_structured_call_only(
    tmp_path: Path, model_server: FakeModelServer, answer: str, expect: str
) -> None:
    reviewed: list[dict[str, Any]] = []
    model_server.responder = scripted(answer, reviewed)
    settings = daemon_settings(
        tmp_path, model_server.base_url, safety={"reviewer_model": "reviewer"}
    )
    async with harness(settings) as h:
        async with watch_feed(h) as feed:
            await h.send(f"please run it; {SECRET_PLAN}")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        pending = (await h.client.get("/api/approvals")).json()
        tools = [m["content"] for m in await h.trajectory() if m["role"] == "tool"]
    (review,) = reviewed
    question = review["messages"][-1]["content"]
    assert json.loads(question) == {
        "tool": "shell_exec", "effect": "shell", "session_tainted": False,
        "arguments": {"command": "echo hi > out.txt", "timeout_s": 120, "cwd": None},
    }  # fmt: skip
    assert SECRET_PLAN not in json.dumps(review)  # the conversation never reaches it
    ran = (tmp_path / "workspace" / "out.txt").exists()
    if expect == "denied":
        assert "denied by the safety policy (reviewer_model)" in tools[0] and not ran
    elif expect == "approval":
        assert len(pending) == 1 and "could not be read" in pending[0]["reason"] and not ran
    else:
        assert ran and pending == []


def test_verdicts_are_parsed_strictly() -> None:
    assert parse_verdict('ok {"verdict": "allow", "reason": "fine"} thanks') == ("allow", "fine")
    assert parse_verdict('{"verdict": "maybe"}')[0] == "ask"
    assert parse_verdict("")[0] == "ask"
