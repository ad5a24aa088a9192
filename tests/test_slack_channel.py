"""Slack end to end in one daemon: signed events in over HTTP, replies out to the fake Slack."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.slack_api import (
    BOT_ID,
    BOT_TOKEN,
    BOT_USER_ID,
    SIGNING_SECRET,
    FakeSlackApi,
    SlackEventSender,
    message_envelope,
    url_verification,
)
from tests.redis_server import REDIS_URL

pytestmark = pytest.mark.anyio

OWNER = "U0OWNER01"


def said(body: dict[str, Any]) -> str:
    """What the person wrote, without the "[time] " the daemon puts before a dated message."""
    return last_user_text(body).partition("] ")[2]


@dataclass
class SlackSetup:
    daemon: Harness
    slack: FakeSlackApi
    model: FakeModelServer
    sender: SlackEventSender
    http: httpx.AsyncClient

    async def deliver(self, envelope: dict[str, Any], **options: Any) -> httpx.Response:
        return await self.sender.adeliver(self.http, envelope, **options)


def slack_entry(
    tmp_path: Path, api_base: str, token: str = BOT_TOKEN, **overrides: Any
) -> dict[str, Any]:
    (tmp_path / "slack-token").write_text(token + "\n")
    (tmp_path / "slack-signing").write_text(SIGNING_SECRET + "\n")
    return {
        "name": "work",
        "bot_token_file": str(tmp_path / "slack-token"),
        "signing_secret_file": str(tmp_path / "slack-signing"),
        "api_base": api_base,
        "allowed_user_ids": [OWNER],
        **overrides,
    }


async def sent_replies(daemon: Harness, count: int, timeout_s: float = 10.0) -> list[Any]:
    """The session's outgoing messages once ``count`` of them are sent (every piece posted)."""
    with anyio.fail_after(timeout_s):
        while True:
            response = await daemon.client.get("/api/sessions/main/outbox")
            messages = response.json()["messages"]
            if sum(m["state"] == "sent" for m in messages) >= count:
                return list(messages)
            await anyio.sleep(0.02)  # the outbox has no change feed over HTTP to await


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        server.responder = lambda body: Reply(text=f"**got** {said(body)}")
        yield server
    assert server.violations == [], "invalid trajectories were sent to the model"


@pytest.fixture
def slack() -> Iterator[FakeSlackApi]:
    with FakeSlackApi() as api:
        yield api


@pytest.fixture
async def setup(
    tmp_path: Path, model: FakeModelServer, slack: FakeSlackApi
) -> AsyncIterator[SlackSetup]:
    settings = daemon_settings(
        tmp_path / "data", model.base_url, chat={"slack": [slack_entry(tmp_path, slack.api_base)]}
    )
    async with harness(settings) as daemon, httpx.AsyncClient() as http:
        sender = SlackEventSender(f"{daemon.running.url}/chat/slack/work/events")
        yield SlackSetup(daemon, slack, model, sender, http)


async def test_url_verification_answers_the_challenge(setup: SlackSetup) -> None:
    response = await setup.deliver(url_verification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmH"))
    assert response.status_code == 200
    assert response.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmH"}


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"secret": "someone-elses-secret"}, "does not match this app's signing secret"),
        ({"timestamp": time.time() - 600}, "more than 5 minutes"),
    ],
)
async def test_a_request_not_signed_by_slack_is_401_with_its_reason(
    setup: SlackSetup, options: dict[str, Any], reason: str
) -> None:
    response = await setup.deliver(message_envelope("hi", user=OWNER), **options)
    assert response.status_code == 401
    assert reason in response.json()["error"]
    assert setup.model.requests == []


async def test_an_owner_in_a_channel_is_answered_once_in_the_thread(setup: SlackSetup) -> None:
    """The model is called once; the reply is one chat.postMessage under the message."""
    envelope = message_envelope(
        "is it ~on~?", user=OWNER, channel="C0CHAN0001", channel_type="channel", ts="1700.000100"
    )
    response = await setup.deliver(envelope)
    assert response.status_code == 200
    [post] = await setup.slack.await_posts(1)
    assert (post.channel, post.thread_ts) == ("C0CHAN0001", "1700.000100")
    assert post.text == "*got* is it ~on~?"
    assert len(setup.model.requests) == 1
    assert said(setup.model.requests[0].body) == "is it ~on~?"


async def test_the_ack_never_waits_for_the_agent(setup: SlackSetup) -> None:
    """While the agent is mid-run (its model stream hangs), a new message is still acked
    well within Slack's 3 s, committed for the agent's next safe point."""
    setup.model.push(Reply(text="thinking", hang=True))
    assert (await setup.deliver(message_envelope("first", user=OWNER))).status_code == 200
    await setup.model.await_requests(1)
    started = time.perf_counter()
    second = await setup.deliver(message_envelope("second", user=OWNER))
    elapsed = time.perf_counter() - started
    assert second.status_code == 200 and second.json()["received"] == "submitted"
    assert elapsed < 3.0, f"acked after {elapsed:.2f} s"
    assert not setup.model.requests[0].completed  # the agent has not finished


async def test_slacks_retries_of_an_event_make_one_event(setup: SlackSetup) -> None:
    """The first delivery and two retries (X-Slack-Retry-Num) are all acked; one answer."""
    envelope = message_envelope("once", user=OWNER)
    answers = [await setup.deliver(envelope, retry_num=n) for n in (0, 1, 2)]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [a.json()["received"] for a in answers] == ["submitted", "duplicate", "duplicate"]
    [post] = await setup.slack.await_posts(1)
    assert (post.channel, post.text) == ("D0DM00001", "*got* once")
    assert len(setup.model.requests) == 1
    status = (await setup.daemon.client.get("/api/status")).json()
    figures = status["chat.slack:work"]
    assert (figures["submitted"], figures["duplicate"], figures["retries"]) == (1, 2, 2)
    assert status["components"]["chat.slack:work"]["ok"] is True  # auth.test named the bot


async def test_a_mention_delivered_as_two_events_is_answered_once(setup: SlackSetup) -> None:
    """With message.channels and app_mention both subscribed, one mention is two events."""
    common = {"user": OWNER, "channel": "C0CHAN0001", "ts": "1700000000.000200"}
    text = f"<@{BOT_USER_ID}> status?"
    first = await setup.deliver(message_envelope(text, channel_type="channel", **common))
    second = await setup.deliver(message_envelope(text, event_type="app_mention", **common))
    assert [first.json()["received"], second.json()["received"]] == ["submitted", "duplicate"]
    [post] = await setup.slack.await_posts(1)
    assert post.address == "C0CHAN0001/1700000000.000200"
    assert len(setup.model.requests) == 1


async def test_a_long_reply_is_several_posts_in_the_thread_in_order(setup: SlackSetup) -> None:
    """Split at 3,900 characters on paragraph boundaries; each piece posted once, in order."""
    paragraphs = [f"**part {n}** " + "word " * 500 for n in range(4)]  # ~2,500 chars each
    setup.model.push(Reply(text="\n\n".join(paragraphs)))
    envelope = message_envelope("tell me everything", user=OWNER, thread_ts="1700000000.000300")
    await setup.deliver(envelope)
    [reply] = await sent_replies(setup.daemon, 1)
    posts = setup.slack.posts_snapshot()
    assert reply["state"] == "sent" and len(posts) == 4
    assert all(post.address == "D0DM00001/1700000000.000300" for post in posts)
    assert [post.text.split()[:2] for post in posts] == [["*part", f"{n}*"] for n in range(4)]
    assert max(len(post.text) for post in posts) <= 3_900


async def test_a_stranger_gets_a_pairing_code_and_never_the_model(setup: SlackSetup) -> None:
    """Slack's retry of the stranger's message sends no second code."""
    envelope = message_envelope("let me in", user="U0STRANGER")
    answers = [await setup.deliver(envelope, retry_num=n) for n in (0, 1)]
    assert [a.json()["received"] for a in answers] == ["pairing", "pairing"]
    assert len(await sent_replies(setup.daemon, 1)) == 1  # one code, sent once
    [post] = setup.slack.posts_snapshot()
    assert post.channel == "D0DM00001" and "pairing code" in post.text
    pending = (await setup.daemon.client.get("/api/pairing")).json()["pending"]
    assert [p["user_id"] for p in pending] == ["U0STRANGER"]
    assert pending[0]["code"] in post.text
    assert setup.model.requests == []


async def test_an_approved_stranger_is_told_and_then_reaches_the_agent(setup: SlackSetup) -> None:
    """`wakeful pairing approve slack <code>` (its API): a "paired" post, then answers."""
    await setup.deliver(message_envelope("let me in", user="U0STRANGER"))
    [pending] = (await setup.daemon.client.get("/api/pairing")).json()["pending"]
    approved = await setup.daemon.client.post(f"/api/pairing/slack/{pending['code']}")
    assert approved.status_code == 200, approved.text
    await setup.slack.await_posts(2)
    assert "paired" in setup.slack.posts_snapshot()[1].text
    await setup.deliver(message_envelope("hello again", user="U0STRANGER"))
    [*_, answer] = await setup.slack.await_posts(3)
    assert answer.text == "*got* hello again"
    assert len(setup.model.requests) == 1


async def test_per_user_sessions_keep_each_person_apart(
    tmp_path: Path, model: FakeModelServer, slack: FakeSlackApi
) -> None:
    entry = slack_entry(tmp_path, slack.api_base, session="per-user")
    settings = daemon_settings(tmp_path / "data", model.base_url, chat={"slack": [entry]})
    async with harness(settings) as daemon, httpx.AsyncClient() as http:
        sender = SlackEventSender(f"{daemon.running.url}/chat/slack/work/events")
        await sender.adeliver(http, message_envelope("mine", user=OWNER))
        [post] = await slack.await_posts(1)
        assert post.text == "*got* mine"
        [said_to_it] = [
            m for m in await daemon.trajectory(f"slack:work:{OWNER}") if m["role"] == "user"
        ]
        assert str(said_to_it["content"]).endswith("mine")


@pytest.mark.parametrize(
    "fields", [{"bot_id": BOT_ID, "user": BOT_USER_ID}, {"subtype": "message_changed"}]
)
async def test_bot_messages_and_edits_are_acked_and_ignored(
    setup: SlackSetup, fields: dict[str, Any]
) -> None:
    envelope = message_envelope("an echo of our own reply")
    envelope["event"].update(fields)
    response = await setup.deliver(envelope)
    assert response.status_code == 200 and "ignored" in response.json()
    assert setup.model.requests == []


async def test_slack_down_is_retried_until_the_reply_goes_out_once(setup: SlackSetup) -> None:
    """503, then 429 ratelimited: the outbox retries; Slack ends up with the reply once."""
    setup.slack.fail_next("down", "ratelimited")
    await setup.deliver(message_envelope("are you there", user=OWNER))
    [post] = await setup.slack.await_posts(1, timeout_s=20)
    assert post.text == "*got* are you there"
    [reply] = await sent_replies(setup.daemon, 1)
    assert reply["attempts"] == 3 and len(setup.slack.attempts) == 3
    assert len(setup.slack.posts_snapshot()) == 1


async def test_a_refused_token_shows_in_status_with_the_fix(
    tmp_path: Path, model: FakeModelServer, slack: FakeSlackApi
) -> None:
    """auth.test answers invalid_auth: the component says so and which file to fix."""
    entry = slack_entry(tmp_path, slack.api_base, token="xoxb-revoked-token")
    settings = daemon_settings(tmp_path / "data", model.base_url, chat={"slack": [entry]})
    async with harness(settings) as daemon:
        with anyio.fail_after(10):
            while True:
                health = (await daemon.client.get("/api/status")).json()["components"]
                if health["chat.slack:work"]["detail"] != "waiting for auth.test":
                    break
                await anyio.sleep(0.02)  # health has no change feed over HTTP to await
    assert health["chat.slack:work"]["ok"] is False
    assert "invalid_auth" in health["chat.slack:work"]["detail"]
    assert "bot_token_file" in health["chat.slack:work"]["detail"]
    assert "xoxb-revoked-token" not in str(health)


async def test_on_redis_a_retried_message_is_one_event_and_a_stranger_gets_one_code(
    tmp_path: Path, model: FakeModelServer, slack: FakeSlackApi, redis_prefix: str
) -> None:
    """The same guarantees with the Redis store (dedup, pairing state, outbox)."""
    store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": redis_prefix}
    entry = slack_entry(tmp_path, slack.api_base)
    chat = {"slack": [entry]}
    settings = daemon_settings(tmp_path / "data", model.base_url, store=store, chat=chat)
    async with harness(settings) as daemon, httpx.AsyncClient() as http:
        sender = SlackEventSender(f"{daemon.running.url}/chat/slack/work/events")
        owner, stranger = message_envelope("on redis", user=OWNER), message_envelope("hi")
        stranger["event"]["user"] = "U0STRANGER"
        for envelope, retry in ((owner, 0), (owner, 1), (stranger, 0), (stranger, 1)):
            assert (await sender.adeliver(http, envelope, retry_num=retry)).status_code == 200
        assert len(await sent_replies(daemon, 2)) == 2
    texts = sorted(post.text for post in slack.posts_snapshot())
    assert texts[0] == "*got* on redis" and "pairing code" in texts[1] and len(texts) == 2
    assert len(model.requests) == 1
