"""The Slack client over real HTTP to the fake Slack: what is posted, how failures are sorted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.daemon_process import free_port
from tests.fakes.slack_api import BOT_ID, BOT_TOKEN, BOT_USER_ID, FakeSlackApi
from wakeful.channels.slack.client import SlackClient
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

pytestmark = pytest.mark.anyio


@pytest.fixture
def slack() -> Iterator[FakeSlackApi]:
    with FakeSlackApi() as api:
        yield api


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_a_reply_goes_into_the_thread_as_mrkdwn(
    slack: FakeSlackApi, http: httpx.AsyncClient
) -> None:
    """Bearer token, JSON body, thread_ts from the address, Markdown converted."""
    client = SlackClient(slack.api_base, BOT_TOKEN, http)
    await client.send_text("C0CHAN0001/1700000000.000100", "**done**: [log](https://e.com/l)")
    [post] = slack.posts
    assert post.authorization == f"Bearer {BOT_TOKEN}"
    assert (post.channel, post.thread_ts) == ("C0CHAN0001", "1700000000.000100")
    assert post.text == "*done*: <https://e.com/l|log>"


async def test_a_dm_reply_goes_to_the_conversation(
    slack: FakeSlackApi, http: httpx.AsyncClient
) -> None:
    await SlackClient(slack.api_base, BOT_TOKEN, http).send_text("D0DM00001", "hi")
    [post] = slack.posts
    assert (post.channel, post.thread_ts, post.text) == ("D0DM00001", None, "hi")
    assert "thread_ts" not in post.body


async def test_auth_test_names_the_bot(slack: FakeSlackApi, http: httpx.AsyncClient) -> None:
    identity = await SlackClient(slack.api_base, BOT_TOKEN, http).auth_test()
    assert (identity.user_id, identity.bot_id) == (BOT_USER_ID, BOT_ID)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("down", "HTTP 503"), ("ratelimited", r"rate limited \(HTTP 429, Retry-After 7 s\)")],
)
async def test_slack_trouble_is_try_later(
    slack: FakeSlackApi, http: httpx.AsyncClient, mode: str, reason: str
) -> None:
    slack.fail_next(mode, retry_after_s=7)  # type: ignore[arg-type]
    client = SlackClient(slack.api_base, BOT_TOKEN, http)
    with pytest.raises(TryLater, match=reason) as caught:
        await client.send_text("D0DM00001", "hi")
    # Slack's Retry-After sets the outbox's next attempt.
    assert caught.value.retry_after_s == (7.0 if mode == "ratelimited" else None)
    await client.send_text("D0DM00001", "hi")  # the next call goes through
    assert len(slack.posts) == 1


async def test_no_server_is_try_later(http: httpx.AsyncClient) -> None:
    client = SlackClient(f"http://127.0.0.1:{free_port()}/api", BOT_TOKEN, http)
    with pytest.raises(TryLater, match="ConnectError") as caught:
        await client.send_text("D0DM00001", "hi")
    assert BOT_TOKEN not in str(caught.value)


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel", "invalid_auth"])
async def test_what_will_never_work_is_never_deliverable(
    slack: FakeSlackApi, http: httpx.AsyncClient, error: str
) -> None:
    slack.workspace.missing_channels.add("C0GONE0001")
    slack.workspace.not_in.add("C0OUT00001")
    channel = {"channel_not_found": "C0GONE0001", "not_in_channel": "C0OUT00001"}.get(
        error, "C0CHAN0001"
    )
    token = "xoxb-revoked" if error == "invalid_auth" else BOT_TOKEN
    with pytest.raises(NeverDeliverable, match=f"Slack chat.postMessage: {error}") as caught:
        await SlackClient(slack.api_base, token, http).send_text(channel, "hi")
    assert "xoxb" not in str(caught.value)
    assert slack.posts == []
