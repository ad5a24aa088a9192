"""request_human_approval and request_human_input: the agent asks, the owner answers
later (HTTP, CLI, chat text), or the timeout's conservative default applies — all
through the approvals machinery, as a tool.result event for the call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec, text_reply
from tests.test_approvals import wait_for_request_with
from tests.test_chat_foundation import run_cli, write_cli_config
from wakeful.channels.chat.decisions import parse_decision

pytestmark = pytest.mark.anyio

COLOUR = {"question": "Which colour for the report?", "default": "keep it grey"}


async def ask(h: Harness, model_server: FakeModelServer, tool: str, args: dict[str, Any]) -> Any:
    model_server.push(Reply(tool_calls=[ToolCallSpec(tool, args)]), text_reply("asked"))
    async with watch_feed(h) as feed:
        await h.send("make the report")
        item = await feed.wait_for(lambda i: i["type"] == "approval")
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
    return item


async def test_the_owner_answers_a_question_and_the_agent_gets_the_words(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        item = await ask(h, model_server, "request_human_input", COLOUR)
        assert item["kind"] == "input" and item["reason"] == COLOUR["question"]
        assert item["default"] == "keep it grey"
        placeholder = [m for m in await h.trajectory() if m["role"] == "tool"][-1]["content"]
        assert f"request {item['id']}" in placeholder and "the default applies" in placeholder
        wrong = await h.client.post(f"/api/approvals/{item['id']}", json={"decision": "approve"})
        assert wrong.status_code == 400 and '"decision": "answer"' in wrong.json()["error"]
        model_server.push(text_reply("blue it is"))
        config = write_cli_config(tmp_path, h.running.url)
        out = await run_cli(["-c", str(config), "answer", item["id"], "blue, like the logo"])
        assert f"answered {item['id']}" in out
        await wait_for_request_with(model_server, "the owner answered: blue, like the logo")
        assert (await h.client.get("/api/approvals")).json() == []


async def test_an_unanswered_question_gets_its_default(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = daemon_settings(tmp_path, model_server.base_url, safety={"approval_timeout_s": 0.5})
    async with harness(settings) as h:
        await ask(h, model_server, "request_human_input", COLOUR)
        await wait_for_request_with(
            model_server, "no answer after 0.5 s. The default applies: keep"
        )


@pytest.mark.parametrize(
    ("decision", "told"),
    [("approve", "the owner approved"), ("deny", "the owner said no: not today")],
)
async def test_a_yes_or_no_question_and_saying_no_is_not_a_denied_call(
    tmp_path: Path, model_server: FakeModelServer, decision: str, told: str
) -> None:
    question = {"question": "Cancel the 3 pm meeting with Pat?"}
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        item = await ask(h, model_server, "request_human_approval", question)
        assert item["kind"] == "question"
        model_server.push(text_reply("ok"))
        body = {"decision": decision, "reason": "not today" if decision == "deny" else ""}
        answer = await h.client.post(f"/api/approvals/{item['id']}", json=body)
        assert answer.status_code == 200, answer.text
        await wait_for_request_with(model_server, told)
        breaker = (await h.client.get("/api/safety")).json()["breaker"]["denials"]
    assert breaker == {}  # a "no" to a question never trips the breaker


def test_answers_are_typed_in_chat_as_the_whole_message() -> None:
    parsed = parse_decision("Answer abcdefgh  blue, like the logo ")
    assert parsed is not None and parsed.decision == "answer"
    assert (parsed.approval_id, parsed.reason) == ("abcdefgh", "blue, like the logo")
    assert parse_decision("answer abcdefgh") is None  # an answer needs words
