"""WhatsApp end to end in one daemon: signed notifications in, replies out to the fake Graph API."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.whatsapp_api import (
    ACCESS_TOKEN,
    APP_SECRET,
    PHONE_NUMBER_ID,
    VERIFY_TOKEN,
    VERSION,
    FakeGraphApi,
    WebhookSender,
    failed_status,
    notification,
    text_message,
)
from tests.redis_server import REDIS_URL
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.whatsapp.client import MAX_TEXT_CHARS, to_whatsapp

pytestmark = pytest.mark.anyio

OWNER = "447700900123"
STRANGER = "15551234567"
COMPONENT = "chat.whatsapp:biz"


def said(body: dict[str, Any]) -> str:
    """What the person wrote, without the "[time] " the daemon puts before a dated message."""
    return last_user_text(body).partition("] ")[2]


def whatsapp_entry(
    tmp_path: Path, api_base: str, token: str = ACCESS_TOKEN, **overrides: Any
) -> dict[str, Any]:
    for name, value in (("token", token), ("secret", APP_SECRET), ("verify", VERIFY_TOKEN)):
        (tmp_path / f"whatsapp-{name}").write_text(value + "\n")
    return {
        "name": "biz",
        "phone_number_id": PHONE_NUMBER_ID,
        "access_token_file": str(tmp_path / "whatsapp-token"),
        "app_secret_file": str(tmp_path / "whatsapp-secret"),
        "verify_token_file": str(tmp_path / "whatsapp-verify"),
        "api_base": api_base,
        "api_version": VERSION,
        "allowed_user_ids": [OWNER],
        **overrides,
    }


@dataclass
class WhatsApp:
    daemon: Harness
    api: FakeGraphApi
    model: FakeModelServer
    sender: WebhookSender
    http: httpx.AsyncClient

    @property
    def url(self) -> str:
        return self.sender.url

    async def says(self, text: str, *, sender: str = OWNER, **options: Any) -> httpx.Response:
        message = text_message(text, sender=sender, **options)
        return await self.deliver(notification(message))

    async def deliver(self, document: dict[str, Any], **options: Any) -> httpx.Response:
        return await self.sender.adeliver(self.http, document, **options)

    async def status(self) -> dict[str, Any]:
        found: dict[str, Any] = (await self.daemon.client.get("/api/status")).json()
        return found

    async def health_when(self, condition: Any) -> dict[str, Any]:
        """The component's health once ``condition(health)`` holds."""
        with anyio.fail_after(10):
            while True:
                health: dict[str, Any] = (await self.status())["components"][COMPONENT]
                if condition(health):
                    return health
                await anyio.sleep(0.02)  # health has no change feed over HTTP to await

    async def outbox(self, session: str = "main") -> list[dict[str, Any]]:
        response = await self.daemon.client.get(f"/api/sessions/{session}/outbox")
        return list(response.json()["messages"])

    async def until_outbox(self, condition: Any, session: str = "main") -> list[dict[str, Any]]:
        with anyio.fail_after(10):
            while True:
                messages = await self.outbox(session)
                if condition(messages):
                    return messages
                await anyio.sleep(0.02)  # the outbox has no change feed over HTTP to await


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        server.responder = lambda body: Reply(text=f"**got** {said(body)}")
        yield server
    assert server.violations == [], "invalid trajectories were sent to the model"


@pytest.fixture
def api() -> Iterator[FakeGraphApi]:
    with FakeGraphApi() as fake:
        yield fake


@asynccontextmanager
async def whatsapp_daemon(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi, **overrides: Any
) -> AsyncIterator[WhatsApp]:
    store = overrides.pop("store", None)
    sections: dict[str, Any] = {
        "chat": {"whatsapp": [whatsapp_entry(tmp_path, api.api_base, **overrides)]}
    }
    if store is not None:
        sections["store"] = store
    settings = daemon_settings(tmp_path / "data", model.base_url, **sections)
    async with harness(settings) as daemon, httpx.AsyncClient() as http:
        sender = WebhookSender(f"{daemon.running.url}/chat/whatsapp/biz/webhook", api)
        yield WhatsApp(daemon, api, model, sender, http)


@pytest.fixture
async def wa(tmp_path: Path, model: FakeModelServer, api: FakeGraphApi) -> AsyncIterator[WhatsApp]:
    async with whatsapp_daemon(tmp_path, model, api) as setup:
        yield setup


async def test_the_verification_request_echoes_the_challenge_for_our_token(wa: WhatsApp) -> None:
    query = {
        "hub.mode": "subscribe",
        "hub.verify_token": VERIFY_TOKEN,
        "hub.challenge": "1158201444",
    }
    answer = await wa.http.get(wa.url, params=query)
    assert (answer.status_code, answer.text) == (200, "1158201444")
    wrong = await wa.http.get(wa.url, params={**query, "hub.verify_token": "guessed"})
    assert wrong.status_code == 403 and "1158201444" not in wrong.text


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"signed": False}, "missing X-Hub-Signature-256"),
        ({"secret": "someone-elses-secret"}, "does not match this app's App Secret"),
    ],
)
async def test_an_unsigned_or_forged_notification_is_401_and_no_event(
    wa: WhatsApp, options: dict[str, Any], reason: str
) -> None:
    response = await wa.deliver(notification(text_message("hi", sender=OWNER)), **options)
    assert response.status_code == 401
    assert reason in response.json()["error"]
    assert (await wa.daemon.trajectory()) == [] and wa.model.requests == []


async def test_an_owner_is_answered_once_and_sees_typing(wa: WhatsApp) -> None:
    """The model is called once; the reply is one text message in WhatsApp's formatting;
    the owner's message is marked read with a typing indicator while the model works."""
    wa.model.push(Reply(text="**got** it", token_delay_s=0.05))
    message = text_message("is it on?", sender=OWNER)
    response = await wa.deliver(notification(message))
    assert response.status_code == 200 and response.json() == {"received": ["submitted"]}
    [sent] = await wa.api.await_sent(1)
    assert (sent.to, sent.type, sent.text) == (OWNER, "text", "*got* it")
    assert sent.body["messaging_product"] == "whatsapp"
    assert said(wa.model.requests[0].body) == "is it on?"
    assert [read["message_id"] for read in wa.api.reads][:1] == [message["id"]]
    assert wa.api.reads[0]["typing_indicator"] == {"type": "text"}


async def test_a_redelivered_notification_is_one_event(wa: WhatsApp) -> None:
    """Meta retries what it did not see answered 200: the wamid is the event id."""
    document = notification(text_message("once", sender=OWNER))
    answers = [(await wa.deliver(document)).json()["received"] for _ in range(3)]
    assert answers == [["submitted"], ["duplicate"], ["duplicate"]]
    [sent] = await wa.api.await_sent(1)
    assert sent.text == "*got* once"
    assert len(wa.model.requests) == 1
    figures = (await wa.status())[COMPONENT]
    assert (figures["submitted"], figures["duplicate"]) == (1, 2)


async def test_several_messages_in_one_notification_are_all_committed(wa: WhatsApp) -> None:
    first, second = (text_message(t, sender=OWNER) for t in ("one", "two"))
    response = await wa.deliver(notification(first, second))
    assert response.json() == {"received": ["submitted", "submitted"]}
    await wa.api.await_sent(2)
    users = [m for m in await wa.daemon.trajectory() if m["role"] == "user"]
    assert [str(m["content"]).partition("] ")[2] for m in users] == ["one", "two"]


async def test_another_numbers_notification_and_statuses_are_acked_and_ignored(
    wa: WhatsApp,
) -> None:
    other = notification(text_message("not ours", sender=OWNER), phone_number_id="999999")
    assert (await wa.deliver(other)).json() == {"received": []}
    await wa.says("hello")
    [sent] = await wa.api.await_sent(1)
    failed = notification(statuses=[failed_status(sent, 131026, "Message undeliverable")])
    assert (await wa.deliver(failed)).status_code == 200
    figures = (await wa.status())[COMPONENT]
    assert figures["status_failed"] == 1 and figures["ignored"] == 1
    assert len(wa.model.requests) == 1


async def test_a_long_reply_is_split_within_the_limit_in_order(wa: WhatsApp) -> None:
    paragraphs = [f"**part {n}** " + "word " * 500 for n in range(4)]  # ~2,500 chars each
    text = "\n\n".join(paragraphs)
    wa.model.push(Reply(text=text))
    await wa.says("tell me everything")
    pieces = split_message(text, MAX_TEXT_CHARS)
    sent = await wa.api.await_sent(len(pieces))
    assert len(pieces) == 4
    assert [s.text for s in sent] == [to_whatsapp(p) for p in pieces]
    assert all(len(s.text) <= MAX_TEXT_CHARS for s in sent)
    assert [s.text.split()[:2] for s in sent if s.text.startswith("*part")] == [
        ["*part", f"{n}*"] for n in range(4)
    ]


async def test_stop_from_whatsapp_closes_the_model_stream(wa: WhatsApp) -> None:
    """ "stop" while a long reply streams aborts it, as it does from POST /api/messages."""
    wa.model.push(Reply(text="a very long story " * 50, hang=True))
    await wa.says("tell me a long story")
    await wa.model.await_requests(1)
    await wa.says("stop")
    aborted = await wa.model.await_abort(0)
    assert aborted.aborted


async def test_a_stranger_pairs_and_then_reaches_the_agent(wa: WhatsApp) -> None:
    """A code (once, though Meta redelivers), nothing for the model; approved, they're in."""
    document = notification(text_message("let me in", sender=STRANGER))
    answers = [(await wa.deliver(document)).json()["received"] for _ in range(2)]
    assert answers == [["pairing"], ["pairing"]]
    [code_message] = await wa.api.await_sent(1)
    assert code_message.to == STRANGER and "pairing code" in code_message.text
    [pending] = (await wa.daemon.client.get("/api/pairing")).json()["pending"]
    assert pending["user_id"] == STRANGER and pending["user_name"] == "User 4567"
    assert pending["code"] in code_message.text and wa.model.requests == []
    approved = await wa.daemon.client.post(f"/api/pairing/whatsapp/{pending['code']}")
    assert approved.status_code == 200, approved.text
    paired = (await wa.api.await_sent(2))[1]
    assert "paired" in paired.text
    await wa.says("hello again", sender=STRANGER)
    answer = (await wa.api.await_sent(3))[2]
    assert (answer.to, answer.text) == (STRANGER, "*got* hello again")


async def test_whatsapp_down_then_rate_limited_is_retried_until_sent_once(wa: WhatsApp) -> None:
    """503, then 130429 throughput, then 131056 pair rate: the outbox backs off and
    retries; WhatsApp ends up with the reply once, and the health recovers."""
    wa.api.fail_next("down", "throughput", "pair_rate")
    await wa.says("are you there")
    [sent] = await wa.api.await_sent(1, timeout_s=30)
    assert sent.text == "*got* are you there"
    [reply] = await wa.until_outbox(lambda ms: any(m["state"] == "sent" for m in ms))
    assert reply["attempts"] == 4
    assert len([a for a in wa.api.attempts if "to" in a]) == 4
    health = (await wa.status())["components"][COMPONENT]
    assert health["ok"], health


async def test_an_outage_shows_in_health_until_a_send_works(wa: WhatsApp) -> None:
    wa.api.fail_for(60, "down")
    await wa.says("hello")
    await wa.api.until(lambda: len([a for a in wa.api.attempts if "to" in a]) >= 1)
    health = await wa.health_when(lambda h: not h["ok"])
    assert "503" in health["detail"] or "Service Unavailable" in health["detail"]
    wa.api.fail_for(0)
    [sent] = await wa.api.await_sent(1, timeout_s=30)
    assert sent.text == "*got* hello"
    assert (await wa.status())["components"][COMPONENT]["ok"]


async def test_outside_the_window_without_a_template_the_reply_fails_with_why(
    wa: WhatsApp,
) -> None:
    """The defaults (no template_name): a reply for a user who last wrote 25 hours ago
    is not sent, and the outbox says why and what would fix it."""
    await wa.says("old news", at=time.time() - 25 * 3600)
    [reply] = await wa.until_outbox(lambda ms: any(m["state"] == "failed" for m in ms))
    assert "24 hours" in reply["last_error"] and "template_name" in reply["last_error"]
    assert wa.api.snapshot() == []


async def test_outside_the_window_a_template_goes_and_the_reply_waits_for_the_user(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi
) -> None:
    """template_name set (a non-default, the point of this test): the template goes out
    once for two replies; both are kept in the store and sent, in order, when the user
    writes again."""
    async with whatsapp_daemon(tmp_path, model, api, template_name="reply_waiting") as wa:
        long_ago = time.time() - 25 * 3600
        await wa.says("first", at=long_ago)
        await wa.until_outbox(lambda ms: sum(m["state"] == "sent" for m in ms) == 1)
        await wa.says("second", at=long_ago + 1)
        await wa.until_outbox(lambda ms: sum(m["state"] == "sent" for m in ms) == 2)
        [template] = api.snapshot()
        assert template.type == "template"
        assert template.body["template"] == {"name": "reply_waiting", "language": {"code": "en_US"}}
        assert (await wa.status())[COMPONENT]["kept"] == 2
        await wa.says("I'm back")
        sent = await api.await_sent(4)
    assert [s.text for s in sent[1:]] == ["*got* first", "*got* second", "*got* I'm back"]


async def test_a_131047_from_whatsapp_keeps_the_reply_too(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi
) -> None:
    """Our clock says the window is open, WhatsApp says 131047: WhatsApp decides."""
    async with whatsapp_daemon(tmp_path, model, api, template_name="reply_waiting") as wa:
        body, headers = wa.sender.request(notification(text_message("hi", sender=OWNER)))
        api.last_inbound[OWNER] = 0.0  # WhatsApp's idea of the window: closed
        await wa.http.post(wa.url, content=body, headers=headers)
        await wa.until_outbox(lambda ms: any(m["state"] == "sent" for m in ms))
        sent = api.snapshot()
        assert [s.type for s in sent] == ["template"]
        assert any(a.get("type") == "text" for a in api.attempts)  # tried, refused


async def test_a_refused_token_shows_in_health_and_sends_fail_with_the_reason(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi
) -> None:
    async with whatsapp_daemon(tmp_path, model, api, token="EAAG-revoked") as wa:
        health = await wa.health_when(lambda h: not h["detail"].startswith("starting"))
        assert health["ok"] is False
        assert "access_token_file" in health["detail"] and "190" in health["detail"]
        await wa.says("hello")
        [reply] = await wa.until_outbox(lambda ms: any(m["state"] == "failed" for m in ms))
        assert "access token was refused" in reply["last_error"]
        assert "EAAG-revoked" not in str(health) + reply["last_error"]


async def test_on_redis_a_redelivery_is_one_event_and_the_window_is_kept(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi, redis_prefix: str
) -> None:
    """The same guarantees with the Redis store (dedup, window state, outbox)."""
    store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": redis_prefix}
    async with whatsapp_daemon(tmp_path, model, api, store=store) as wa:
        document = notification(text_message("on redis", sender=OWNER))
        answers = [(await wa.deliver(document)).json()["received"] for _ in range(2)]
        assert answers == [["submitted"], ["duplicate"]]
        [sent] = await api.await_sent(1)
    assert sent.text == "*got* on redis" and len(model.requests) == 1


async def test_a_template_whatsapp_refuses_fails_the_reply_with_the_key_to_fix(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi
) -> None:
    async with whatsapp_daemon(tmp_path, model, api, template_name="never_approved") as wa:
        await wa.says("old news", at=time.time() - 25 * 3600)
        [reply] = await wa.until_outbox(lambda ms: any(m["state"] == "failed" for m in ms))
    assert "132001" in reply["last_error"] and "check template_name" in reply["last_error"]
    assert api.snapshot() == []


async def test_the_window_outlives_a_restart(
    tmp_path: Path, model: FakeModelServer, api: FakeGraphApi
) -> None:
    """The last message time is in the store: after a restart, a message Meta redelivers
    a day late (its timestamp 25 h old) is answered, because the user wrote today —
    with the defaults (no template) a closed window would fail the reply."""
    async with whatsapp_daemon(tmp_path, model, api) as wa:
        await wa.says("today")
        await api.await_sent(1)
    async with whatsapp_daemon(tmp_path, model, api) as wa:
        await wa.says("yesterday's", at=time.time() - 25 * 3600)
        sent = await api.await_sent(2)
    assert [s.text for s in sent] == ["*got* today", "*got* yesterday's"]
