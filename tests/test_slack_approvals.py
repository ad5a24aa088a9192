"""Approvals on Slack, end to end: the notice is Block Kit with Approve/Deny buttons; the
owner's press (a signed ``block_actions`` request to the interactivity URL) runs the
call once and the notice is rewritten; a bad signature is 401 and decides nothing; a
press by anyone else decides nothing; "deny <id> <reason>" typed in Slack denies.

Real daemon, the fake Slack Web API and the fake model over loopback HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, text_reply
from tests.fakes.slack_api import (
    FakeSlackApi,
    Post,
    SlackEventSender,
    SlackInteractionSender,
    block_actions_payload,
    buttons,
    message_envelope,
)
from tests.test_approvals import runs, tainted_call, wait_for_request_with
from tests.test_slack_channel import OWNER, slack_entry

pytestmark = pytest.mark.anyio

DM = "D0DM00001"
STRANGER = "U0STRANGE1"


@pytest.fixture
def slack() -> Iterator[FakeSlackApi]:
    with FakeSlackApi() as api:
        yield api


@dataclass
class Slack:
    daemon: Harness
    api: FakeSlackApi
    presses: SlackInteractionSender
    events: SlackEventSender
    http: httpx.AsyncClient

    async def press(self, payload: dict[str, Any], **options: Any) -> httpx.Response:
        return await self.presses.adeliver(self.http, payload, **options)

    async def notice(self, approval_id: str) -> Post:
        api = self.api
        await api.until(lambda: any(approval_id in p.text for p in api.posts), what="the notice")
        return next(p for p in api.posts_snapshot() if approval_id in p.text)

    async def approval(self, approval_id: str) -> dict[str, Any]:
        listed = (await self.daemon.client.get("/api/approvals?all=1")).json()
        found: dict[str, Any] = next(a for a in listed if a["id"] == approval_id)
        return found


@asynccontextmanager
async def slack_daemon(
    tmp_path: Path, model: FakeModelServer, api: FakeSlackApi
) -> AsyncIterator[Slack]:
    settings = daemon_settings(
        tmp_path,
        model.base_url,
        chat={"slack": [slack_entry(tmp_path, api.api_base)]},
        notify={"urgent": [f"chat:slack:work#{DM}"]},
    )
    async with harness(settings) as h, httpx.AsyncClient() as http:
        base = f"{h.running.url}/chat/slack/work"
        yield Slack(
            h,
            api,
            SlackInteractionSender(f"{base}/interactive"),
            SlackEventSender(f"{base}/events"),
            http,
        )


async def test_the_owners_approve_press_runs_the_call_once_and_rewrites_the_notice(
    tmp_path: Path, model_server: FakeModelServer, slack: FakeSlackApi
) -> None:
    async with slack_daemon(tmp_path, model_server, slack) as s:
        approval = await tainted_call(s.daemon, model_server)
        aid = approval["id"]
        notice = await s.notice(aid)
        assert notice.channel == DM
        assert [(a, v) for a, v, _ in buttons(notice)] == [("approve", aid), ("deny", aid)]
        section = notice.body["blocks"][0]
        assert section["type"] == "section" and aid in section["text"]["text"]

        model_server.push(text_reply("done"))
        slack.update_gate.clear()  # Slack is slow to take chat.update: the ack must not wait
        answer = await s.press(block_actions_payload(notice, "approve", user=OWNER))
        assert answer.status_code == 200, answer.text
        assert (await s.approval(aid))["decision"] == "approve"
        await wait_for_request_with(model_server, "approved by the owner and run once")
        assert slack.updates == []  # still held: the press was answered before it
        slack.update_gate.set()
        await slack.until(lambda: len(slack.updates) == 1, what="chat.update")
        now = slack.message(notice)
        assert [b["type"] for b in now["blocks"]] == ["section", "context"]  # no buttons
        shown = now["blocks"][1]["elements"][0]["text"]
        assert shown == f"Approved by slack:work:{OWNER}: shell_exec runs once."
        decided = await s.approval(aid)
        assert (decided["decision"], decided["decided_by"]) == ("approve", f"slack:work:{OWNER}")
    assert runs(tmp_path) == 1


async def test_a_bad_signature_or_a_stranger_decides_nothing(
    tmp_path: Path, model_server: FakeModelServer, slack: FakeSlackApi
) -> None:
    async with slack_daemon(tmp_path, model_server, slack) as s:
        approval = await tainted_call(s.daemon, model_server)
        aid = approval["id"]
        notice = await s.notice(aid)
        payload = block_actions_payload(notice, "approve", user=OWNER)
        forged = await s.press(payload, secret="someone-elses-secret")
        assert forged.status_code == 401
        assert "does not match this app's signing secret" in forged.json()["error"]
        assert (await s.approval(aid))["state"] == "pending"

        stranger = await s.press(block_actions_payload(notice, "approve", user=STRANGER))
        assert stranger.status_code == 200
        await slack.until(lambda: len(slack.ephemerals) == 1, what="the ephemeral answer")
        [told] = slack.ephemerals
        assert (told["user"], told["channel"]) == (STRANGER, DM)
        assert told["text"] == "Only the owner can decide this."
        assert (await s.approval(aid))["state"] == "pending"
        assert slack.updates == [] and len(buttons(notice)) == 2
        status = (await s.daemon.client.get("/api/status")).json()["chat.slack:work"]
        assert (status["presses_refused"], status["presses_not_allowed"]) == (1, 1)
    assert runs(tmp_path) == 0


async def test_deny_typed_in_slack_denies_with_the_reason(
    tmp_path: Path, model_server: FakeModelServer, slack: FakeSlackApi
) -> None:
    async with slack_daemon(tmp_path, model_server, slack) as s:
        approval = await tainted_call(s.daemon, model_server)
        aid = approval["id"]
        await s.notice(aid)
        model_server.push(text_reply("understood"))
        delivered = await s.events.adeliver(
            s.http, message_envelope(f"deny {aid} not now", user=OWNER, channel=DM)
        )
        assert delivered.json()["received"] == "decided"
        await wait_for_request_with(model_server, "denied by the owner: not now")
        line = f"denied {aid}: shell_exec will not run (not now)"
        await slack.until(lambda: any(p.text == line for p in slack.posts), what="the answer")
        # A second press on the old notice is told the first decision stands.
        notice = await s.notice(aid)
        await s.press(block_actions_payload(notice, "approve", user=OWNER))
        await slack.until(lambda: len(slack.updates) == 1, what="chat.update")
        shown = slack.message(notice)["blocks"][1]["elements"][0]["text"]
        assert shown == f"Denied by slack:work:{OWNER} (not now): shell_exec was not run."
    assert runs(tmp_path) == 0
