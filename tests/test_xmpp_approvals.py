"""Approvals over XMPP, end to end: the notice reaches the owner's chat; XMPP clients
have no buttons (few render XEP-0004 forms in a message), so the owner types
"approve <id>" or "deny <id> <reason>"; a stranger typing a decision decides nothing
and is asked to pair.

The daemon in-process (tests/daemon_harness.py), a real Prosody, real slixmpp users;
the pending approval comes from a stranger's webhook event the model obeys
(``tainted_call``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.fakes.model_server import FakeModelServer, text_reply
from tests.prosody_server import ProsodyServer
from tests.test_approvals import runs, tainted_call, wait_for_request_with
from tests.xmpp_daemon import PASSWORDS, register_people, write_password, xmpp_entry
from tests.xmpp_user import XmppUser

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def daemon(
    tmp_path: Path, model: FakeModelServer, prosody: ProsodyServer
) -> AsyncIterator[tuple[Harness, XmppUser, XmppUser]]:
    bot, owner, stranger = register_people(prosody)
    entry = xmpp_entry(prosody, bot, [owner], write_password(tmp_path))
    settings = daemon_settings(
        tmp_path,
        model.base_url,
        chat={"xmpp": [entry]},
        notify={"urgent": [f"chat:xmpp:home#{owner}"]},
    )
    with (
        XmppUser(prosody, owner, PASSWORDS["owner"]) as owner_client,
        XmppUser(prosody, stranger, PASSWORDS["stranger"]) as stranger_client,
    ):
        async with harness(settings) as h:
            with anyio.fail_after(20):
                while not (await health(h))["ok"]:  # noqa: ASYNC110 - health has no event
                    await anyio.sleep(0.05)
            yield h, owner_client, stranger_client


async def health(h: Harness) -> dict[str, Any]:
    found: dict[str, Any] = (await h.client.get("/api/status")).json()["components"][
        "chat.xmpp:home"
    ]
    return found


async def messages(user: XmppUser, jid: str, count: int) -> list[str]:
    """The client waits on its own thread: the daemon's loop runs meanwhile."""
    found: list[str] = await anyio.to_thread.run_sync(user.wait_messages, jid, count)
    return found


async def approval_state(h: Harness, approval_id: str) -> dict[str, Any]:
    listed = (await h.client.get("/api/approvals?all=1")).json()
    found: dict[str, Any] = next(a for a in listed if a["id"] == approval_id)
    return found


async def test_approve_typed_in_the_chat_runs_the_call_once(
    tmp_path: Path, model_server: FakeModelServer, prosody: ProsodyServer
) -> None:
    async with daemon(tmp_path, model_server, prosody) as (h, owner, _):
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        bot = "bot@localhost"
        [notice] = await messages(owner, bot, 1)
        assert aid in notice and f'Reply "approve {aid}"' in notice
        model_server.push(text_reply("done"))
        await anyio.to_thread.run_sync(owner.say, bot, f"approve {aid}")
        await wait_for_request_with(model_server, "approved by the owner and run once")
        answer = (await messages(owner, bot, 2))[1]
        assert answer == f"approved {aid}: shell_exec runs once now"
        decided = await approval_state(h, aid)
        assert (decided["decision"], decided["decided_by"]) == (
            "approve",
            "xmpp:home:owner@localhost",
        )
        # Typed again (a redelivery, or a second thought): the first decision stands.
        await anyio.to_thread.run_sync(owner.say, bot, f"deny {aid}")
        again = (await messages(owner, bot, 3))[2]
        assert again.startswith(f"approval {aid} was already decided"), again
    assert runs(tmp_path) == 1


async def test_deny_typed_in_the_chat_denies_and_a_strangers_decision_counts_for_nothing(
    tmp_path: Path, model_server: FakeModelServer, prosody: ProsodyServer
) -> None:
    async with daemon(tmp_path, model_server, prosody) as (h, owner, stranger):
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        bot = "bot@localhost"
        await messages(owner, bot, 1)
        await anyio.to_thread.run_sync(stranger.say, bot, f"approve {aid}")
        [asked] = await messages(stranger, bot, 1)
        assert "pairing code" in asked.lower()
        assert (await approval_state(h, aid))["state"] == "pending"

        model_server.push(text_reply("understood"))
        await anyio.to_thread.run_sync(owner.say, bot, f"  Deny {aid.upper()} too risky  ")
        body = await wait_for_request_with(model_server, "denied by the owner: too risky")
        answer = (await messages(owner, bot, 2))[1]
        assert answer == f"denied {aid}: shell_exec will not run (too risky)"
        decided = await approval_state(h, aid)
        assert decided["decided_reason"] == "too risky"
        assert decided["decided_by"] == "xmpp:home:owner@localhost"
        assert not any(
            re.search(r"deny", last_user_text(r.body), re.I) for r in model_server.requests
        )
        assert "The owner denied it (too risky)" in str(body["messages"])
    assert runs(tmp_path) == 0
