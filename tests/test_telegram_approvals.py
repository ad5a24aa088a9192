"""Approvals on Telegram, end to end: the notice comes with Approve/Deny buttons; the
owner's press runs the call exactly once; anyone else's press decides nothing; a
press delivered twice decides once; "deny <id> <reason>" typed in the chat denies.

Real daemon, the fake Bot API and the fake model over loopback HTTP; the pending
approval comes from a stranger's webhook event that the model obeys
(``tainted_call``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.daemon_process import free_port
from tests.fakes.model_server import FakeModelServer, text_reply
from tests.fakes.telegram_api import FakeTelegramApi, SentMessage, bot_config
from tests.test_approvals import runs, tainted_call, wait_for_request_with

pytestmark = pytest.mark.anyio

OWNER = 4242
STRANGER = 777


@pytest.fixture
def telegram() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as fake:
        fake.known_chats.add(OWNER)  # the owner's chat exists before they write
        yield fake


@asynccontextmanager
async def daemon(
    tmp_path: Path, model: FakeModelServer, telegram: FakeTelegramApi, *, port: int = 0, **bot: Any
) -> AsyncIterator[Harness]:
    settings = daemon_settings(
        tmp_path,
        model.base_url,
        chat={"telegram": [bot_config(telegram, tmp_path, allowed_user_ids=[OWNER], **bot)]},
        notify={"urgent": [f"chat:telegram:tg#{OWNER}"]},
        server={"bind": f"127.0.0.1:{port}"},
    )
    async with harness(settings) as h:
        yield h


async def notice_of(telegram: FakeTelegramApi, approval_id: str) -> SentMessage:
    await telegram.until(
        lambda: any(approval_id in m.visible for m in telegram.sent), what="the approval notice"
    )
    return next(m for m in telegram.sent if approval_id in m.visible)


async def approval_state(h: Harness, approval_id: str) -> dict[str, Any]:
    listed = (await h.client.get("/api/approvals?all=1")).json()
    found: dict[str, Any] = next(a for a in listed if a["id"] == approval_id)
    return found


async def test_the_notice_has_buttons_and_the_owners_press_runs_the_call_once(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    async with daemon(tmp_path, model_server, telegram) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(telegram, aid)
        assert notice.chat_id == OWNER
        assert notice.buttons == [("Approve", f"approve:{aid}"), ("Deny", f"deny:{aid}")]
        assert f'Reply "approve {aid}"' in notice.visible  # the typed fallback is still said

        model_server.push(text_reply("done"))
        press = telegram.user_presses(OWNER, notice, f"approve:{aid}")
        await wait_for_request_with(model_server, "approved by the owner and run once")
        query = press["callback_query"]["id"]
        await telegram.until(lambda: query in telegram.callback_answers, what="the answer")
        assert telegram.callback_answers[query] == f"approved {aid}: shell_exec runs once now"
        await telegram.until(lambda: notice.edits == 1, what="the notice edited")
        assert notice.reply_markup == {"inline_keyboard": []}  # the buttons are gone
        assert notice.visible.endswith(f"Approved by telegram:tg:{OWNER}: shell_exec runs once.")
        # The press moved the offset past it, once.
        await telegram.until(lambda: press["update_id"] + 1 in telegram.get_updates_offsets)
        decided = await approval_state(h, aid)
        assert (decided["decision"], decided["decided_by"]) == ("approve", f"telegram:tg:{OWNER}")
    assert runs(tmp_path) == 1
    assert telegram.allowed_updates is not None and "callback_query" in telegram.allowed_updates


async def test_a_press_from_someone_not_allowed_decides_nothing(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    async with daemon(tmp_path, model_server, telegram) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(telegram, aid)
        press = telegram.user_presses(STRANGER, notice, f"approve:{aid}", username="mallory")
        query = press["callback_query"]["id"]
        await telegram.until(lambda: query in telegram.callback_answers, what="the answer")
        assert telegram.callback_answers[query] == "Only the owner can decide this."
        await telegram.until(lambda: press["update_id"] + 1 in telegram.get_updates_offsets)
        assert (await approval_state(h, aid))["state"] == "pending"
        assert notice.edits == 0 and len(notice.buttons) == 2

        # The owner taps twice (approve, then deny): the first decision stands.
        model_server.push(text_reply("done"))
        first = telegram.user_presses(OWNER, notice, f"approve:{aid}")
        second = telegram.user_presses(OWNER, notice, f"deny:{aid}")
        queries = [first["callback_query"]["id"], second["callback_query"]["id"]]
        await telegram.until(lambda: all(q in telegram.callback_answers for q in queries))
        assert telegram.callback_answers[queries[1]].startswith(
            f"approval {aid} was already decided (approved by telegram:tg:{OWNER})"
        )
        await wait_for_request_with(model_server, "approved by the owner and run once")
        assert (await approval_state(h, aid))["decision"] == "approve"
    assert runs(tmp_path) == 1


async def test_the_same_press_delivered_twice_decides_once(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """Webhook mode: Telegram re-posts an update it saw no answer to; the second is a no-op."""
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    async with daemon(
        tmp_path, model_server, telegram, mode="webhook", public_url=public, port=port
    ) as h:
        await telegram.until(lambda: telegram.webhook is not None)
        assert telegram.webhook is not None
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(telegram, aid)
        model_server.push(text_reply("done"))
        press = telegram.user_presses(OWNER, notice, f"approve:{aid}")
        await telegram.until(lambda: 200 in telegram.webhook.statuses, what="the press taken")
        await wait_for_request_with(model_server, "approved by the owner and run once")
        headers = {"X-Telegram-Bot-Api-Secret-Token": telegram.webhook.secret_token or ""}
        async with httpx.AsyncClient() as client:
            again = await client.post(telegram.webhook.url, json=press, headers=headers)
        assert again.status_code == 200
        decided = await approval_state(h, aid)
        assert decided["decision"] == "approve"
        assert notice.edits == 1  # the redelivery showed the same decision: nothing to edit
    assert runs(tmp_path) == 1
    assert telegram.allowed_updates is not None and "callback_query" in telegram.allowed_updates


async def test_deny_typed_in_the_chat_denies_with_the_reason(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    async with daemon(tmp_path, model_server, telegram) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        await notice_of(telegram, aid)
        # A stranger typing a decision is asked to pair; nothing is decided.
        telegram.known_chats.add(STRANGER)
        telegram.user_says(STRANGER, f"approve {aid}", username="mallory")
        await telegram.until(lambda: any(m.chat_id == STRANGER for m in telegram.sent))
        [asked] = telegram.sent_to(STRANGER)
        assert "pairing code" in asked.visible.lower()
        assert (await approval_state(h, aid))["state"] == "pending"

        model_server.push(text_reply("understood"))
        typed = telegram.user_says(OWNER, f"  Deny {aid.upper()} too risky  ")
        body = await wait_for_request_with(model_server, "denied by the owner: too risky")
        answer = f"denied {aid}: shell_exec will not run (too risky)"
        await telegram.until(lambda: any(m.visible == answer for m in telegram.sent_to(OWNER)))
        await telegram.until(lambda: typed["update_id"] + 1 in telegram.get_updates_offsets)
        decided = await approval_state(h, aid)
        assert decided["decided_reason"] == "too risky"
        assert decided["decided_by"] == f"telegram:tg:{OWNER}"
        # The decision never reached the model as something the owner said.
        assert not any(
            re.search(r"deny", last_user_text(r.body), re.I) for r in model_server.requests
        )
        assert "The owner denied it (too risky)" in str(body["messages"])
    assert runs(tmp_path) == 0
