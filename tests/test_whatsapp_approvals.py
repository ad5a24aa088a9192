"""Approvals on WhatsApp, end to end: the notice is an interactive message with Approve /
Deny reply buttons; the owner's press runs the call once and is answered with the
outcome; a press delivered twice decides once; a stranger's press decides nothing;
"deny <id> <reason>" typed in the chat denies.

Real daemon, the fake Graph API and the fake model over loopback HTTP; the pending
approval comes from a stranger's webhook event that the model obeys (``tainted_call``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, text_reply
from tests.fakes.whatsapp_api import (
    FakeGraphApi,
    Sent,
    WebhookSender,
    button_reply,
    notification,
    text_message,
)
from tests.test_approvals import runs, tainted_call, wait_for_request_with
from tests.test_whatsapp_channel import OWNER, STRANGER, whatsapp_entry
from wakeful.channels.whatsapp.client import WhatsAppClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def api() -> Iterator[FakeGraphApi]:
    with FakeGraphApi() as fake:
        yield fake


@asynccontextmanager
async def daemon(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi
) -> AsyncIterator[tuple[Harness, WebhookSender, httpx.AsyncClient]]:
    settings = daemon_settings(
        tmp_path,
        model.base_url,
        chat={"whatsapp": [whatsapp_entry(tmp_path, api.api_base)]},
        notify={"urgent": [f"chat:whatsapp:biz#{OWNER}"]},
    )
    async with harness(settings) as h, httpx.AsyncClient() as http:
        sender = WebhookSender(f"{h.running.url}/chat/whatsapp/biz/webhook", api)
        # The owner wrote today: the 24-hour window is open for the notice.
        model.push(text_reply("hello"))
        await sender.adeliver(http, notification(text_message("hi", sender=OWNER)))
        await api.await_sent(1)
        yield h, sender, http


async def notice_of(api: FakeGraphApi, approval_id: str) -> Sent:
    await api.until(lambda: any(approval_id in s.text for s in api.sent), what="the notice")
    return next(s for s in api.snapshot() if approval_id in s.text)


async def approval_state(h: Harness, approval_id: str) -> dict[str, Any]:
    listed = (await h.client.get("/api/approvals?all=1")).json()
    found: dict[str, Any] = next(a for a in listed if a["id"] == approval_id)
    return found


async def test_the_owners_press_runs_the_call_once_and_a_redelivery_decides_nothing(
    tmp_path: Path, model_server: FakeModelServer, api: FakeGraphApi
) -> None:
    async with daemon(tmp_path, model_server, api) as (h, sender, http):
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(api, aid)
        assert (notice.to, notice.type) == (OWNER, "interactive")
        assert notice.buttons == [(f"approve:{aid}", "Approve"), (f"deny:{aid}", "Deny")]

        model_server.push(text_reply("done"))
        press = notification(button_reply(notice, f"approve:{aid}", sender=OWNER))
        first = await sender.adeliver(http, press)
        again = await sender.adeliver(http, press)  # Meta redelivers
        assert (first.json(), again.json()) == (
            {"received": ["decided"]},
            {"received": ["decided"]},
        )
        await wait_for_request_with(model_server, "approved by the owner and run once")
        answer = f"approved {aid}: shell_exec runs once now"
        await api.until(lambda: any(s.text == answer for s in api.sent), what="the outcome")
        decided = await approval_state(h, aid)
        assert (decided["decision"], decided["decided_by"]) == ("approve", f"whatsapp:biz:{OWNER}")
    assert runs(tmp_path) == 1
    assert sum(s.text == answer for s in api.snapshot()) == 1  # one answer for two deliveries


async def test_a_strangers_press_decides_nothing_and_a_typed_deny_denies(
    tmp_path: Path, model_server: FakeModelServer, api: FakeGraphApi
) -> None:
    async with daemon(tmp_path, model_server, api) as (h, sender, http):
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(api, aid)
        pressed = await sender.adeliver(
            http, notification(button_reply(notice, f"approve:{aid}", sender=STRANGER))
        )
        assert pressed.json() == {"received": ["pressed"]}
        assert (await approval_state(h, aid))["state"] == "pending"

        model_server.push(text_reply("understood"))
        typed = notification(text_message(f"Deny {aid} too risky", sender=OWNER))
        assert (await sender.adeliver(http, typed)).json() == {"received": ["decided"]}
        await wait_for_request_with(model_server, "denied by the owner: too risky")
        answer = f"denied {aid}: shell_exec will not run (too risky)"
        await api.until(lambda: any(s.text == answer for s in api.sent), what="the answer")
        assert (await approval_state(h, aid))["decided_reason"] == "too risky"
    assert runs(tmp_path) == 0


async def test_a_notice_past_a_button_messages_body_goes_as_text_then_buttons(
    tmp_path: Path, model_server: FakeModelServer, api: FakeGraphApi
) -> None:
    """The body of a button message holds 1,024 characters: a longer notice is sent as
    text, the buttons under a short line naming the approval."""

    def report(_: object) -> None:
        return None

    async with httpx.AsyncClient() as http:
        client = WhatsAppClient(api.api_base, "v23.0", "106540352242922", api.token, http, report)
        api.user_wrote(OWNER, "wamid.IN1", 1e12)  # the window is open
        await client.send_approval_notice(OWNER, "x" * 1500, "k3fwz2qp")
        sent = [s.body for s in api.snapshot()]
    assert [body["type"] for body in sent] == ["text", "interactive"]
    assert sent[1]["interactive"]["body"]["text"] == "Approve or deny k3fwz2qp?"
