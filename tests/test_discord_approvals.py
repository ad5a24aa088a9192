"""Approvals on Discord, end to end: the notice comes with Approve/Deny buttons (an action
row); the owner's press (INTERACTION_CREATE) runs the call exactly once and is answered
with an UPDATE_MESSAGE callback that shows the decision and drops the buttons; anyone
else's press decides nothing and is told so, only to them; a press delivered twice
decides once; "deny <id> <reason>" typed in the DM denies.

Real daemon, the fake Discord and the fake model over loopback; the pending approval
comes from a stranger's webhook event that the model obeys (``tainted_call``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.discord_api import FakeDiscord, SentMessage, bot_config, dm_channel_of
from tests.fakes.model_server import FakeModelServer, text_reply
from tests.test_approvals import runs, tainted_call, wait_for_request_with
from tests.test_telegram_approvals import approval_state

pytestmark = pytest.mark.anyio

OWNER = "80351110224678912"
STRANGER = "80351110224678999"
OWNER_DM = dm_channel_of(OWNER)


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        yield fake


@asynccontextmanager
async def daemon(
    tmp_path: Path, model: FakeModelServer, discord: FakeDiscord
) -> AsyncIterator[Harness]:
    settings = daemon_settings(
        tmp_path,
        model.base_url,
        chat={"discord": [bot_config(discord, tmp_path, allowed_user_ids=[OWNER])]},
        notify={"urgent": [f"chat:discord:dc#{OWNER_DM}"]},
    )
    async with harness(settings) as h:
        await discord.until(discord.connected, what="the bot's Gateway session")
        yield h


async def notice_of(discord: FakeDiscord, approval_id: str) -> SentMessage:
    await discord.until(
        lambda: any(approval_id in m.content for m in discord.sent), what="the approval notice"
    )
    return next(m for m in discord.sent if approval_id in m.content)


async def answer_to(discord: FakeDiscord, interaction_id: str) -> dict[str, Any]:
    await discord.until(lambda: interaction_id in discord.interaction_answers, what="the answer")
    return discord.interaction_answers[interaction_id]


async def test_the_notice_has_buttons_and_the_owners_press_runs_the_call_once(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    async with daemon(tmp_path, model_server, discord) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(discord, aid)
        assert notice.channel_id == OWNER_DM
        assert notice.buttons == [("Approve", f"approve:{aid}"), ("Deny", f"deny:{aid}")]
        assert f'Reply "approve {aid}"' in notice.content  # the typed fallback is still said

        model_server.push(text_reply("done"))
        pressed = discord.user_presses(OWNER, notice, f"approve:{aid}")
        answer = await answer_to(discord, pressed)
        await wait_for_request_with(model_server, "approved by the owner and run once")
        decided = await approval_state(h, aid)
    assert discord.answered_after[pressed] < 3.0  # Discord's deadline for the first answer
    assert answer["type"] == 7  # UPDATE_MESSAGE: the notice itself shows the outcome
    assert answer["data"]["components"] == []
    assert answer["data"]["content"].endswith(
        f"Approved by discord:dc:{OWNER}: shell_exec runs once."
    )
    assert notice.edits == 1 and notice.buttons == []
    assert (decided["decision"], decided["decided_by"]) == ("approve", f"discord:dc:{OWNER}")
    assert runs(tmp_path) == 1


async def test_a_stranger_decides_nothing_and_a_second_press_changes_nothing(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    async with daemon(tmp_path, model_server, discord) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        notice = await notice_of(discord, aid)
        mallory = discord.user_presses(STRANGER, notice, f"approve:{aid}", username="mallory")
        refused = await answer_to(discord, mallory)
        assert refused == {
            "type": 4,
            "data": {"content": "Only the owner can decide this.", "flags": 64},
        }
        assert (await approval_state(h, aid))["state"] == "pending"
        assert notice.edits == 0 and len(notice.buttons) == 2

        # The owner taps Approve, then (on a stale screen) Deny: the first decision stands.
        model_server.push(text_reply("done"))
        first = discord.user_presses(OWNER, notice, f"approve:{aid}")
        await answer_to(discord, first)
        second = discord.user_presses(OWNER, notice, f"deny:{aid}")
        again = await answer_to(discord, second)
        await wait_for_request_with(model_server, "approved by the owner and run once")
        assert (await approval_state(h, aid))["decision"] == "approve"
    assert again["type"] == 7
    assert again["data"]["content"].endswith(
        f"Approved by discord:dc:{OWNER}: shell_exec runs once."
    )
    assert runs(tmp_path) == 1


async def test_deny_typed_in_the_dm_denies_with_the_reason(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    async with daemon(tmp_path, model_server, discord) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        await notice_of(discord, aid)
        model_server.push(text_reply("understood"))
        discord.user_says(OWNER, f"deny {aid} too risky")
        await wait_for_request_with(model_server, "denied by the owner: too risky")
        line = f"denied {aid}: shell_exec will not run (too risky)"
        await discord.until(lambda: any(m.content == line for m in discord.sent_to(OWNER_DM)))
        decided = await approval_state(h, aid)
    assert (decided["decided_reason"], decided["decided_by"]) == (
        "too risky",
        f"discord:dc:{OWNER}",
    )
    assert runs(tmp_path) == 0
