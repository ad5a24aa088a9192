"""Discord end to end, in-process: the daemon, the fake Discord (Gateway and REST) and the
fake model, over real websockets and HTTP."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.discord_api import BOT_ID, FakeDiscord, bot_config, dm_channel_of
from tests.fakes.model_server import FakeModelServer, Reply
from tests.redis_server import REDIS_URL
from tests.test_budget import _run_lines
from tests.test_chat_foundation import write_cli_config
from tests.test_telegram_channel import echo, said
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.discord.client import MAX_MESSAGE_CHARS
from wakeful.channels.discord.gateway import INTENTS

pytestmark = pytest.mark.anyio

OWNER = "80351110224678912"
OTHER_OWNER = "80351110224678913"
STRANGER = "80351110224678999"
OWNER_DM = dm_channel_of(OWNER)
ALLOWED = "1500000000000000001"  # the fake's one text channel
ELSEWHERE = "1500000000000000002"
THREAD = "1500000000000000003"


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        fake.guild_channel(ELSEWHERE)
        fake.guild_channel(THREAD, parent_id=ALLOWED)
        yield fake


@asynccontextmanager
async def daemon(
    tmp_path: Path,
    model: FakeModelServer,
    discord: FakeDiscord,
    *,
    store: dict[str, Any] | None = None,
    **bot: Any,
) -> AsyncIterator[Harness]:
    entry = bot_config(discord, tmp_path, **({"allowed_user_ids": [OWNER]} | bot))
    entry.setdefault("allowed_channel_ids", [ALLOWED])
    settings = daemon_settings(
        tmp_path / "data", model.base_url, chat={"discord": [entry]}, store=store or {}
    )
    async with harness(settings) as h:
        await discord.until(discord.connected, what="the bot's Gateway session")
        yield h


async def component_status(h: Harness) -> dict[str, Any]:
    status: dict[str, Any] = (await h.client.get("/api/status")).json()
    return status


async def test_an_owners_dm_is_answered_once_in_the_same_dm(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """IDENTIFY with the intents; the DM reaches the model once; one reply, in that DM,
    with no mentions parsed and a nonce."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "hello from discord")
        [request] = await model_server.await_requests(1)
        [sent] = await discord.await_sent(1)
    assert said(request.body) == "hello from discord"
    assert (sent.channel_id, sent.content) == (OWNER_DM, "answer to hello from discord")
    [identify] = discord.ops(2)
    assert identify["d"]["intents"] == INTENTS
    assert INTENTS & (1 << 9) and INTENTS & (1 << 12) and INTENTS & (1 << 15)
    post = next(c for c in discord.calls if c.method == "POST" and c.path.endswith("/messages"))
    assert post.body["allowed_mentions"] == {"parse": []}
    assert post.body["enforce_nonce"] is True and len(post.body["nonce"]) <= 25
    assert len(model_server.requests) == 1 and len(discord.sent) == 1


async def test_guild_channels_the_owner_named_and_their_threads_are_heard_no_others(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """An allowed channel is answered there; a thread under it is answered in the thread;
    another channel of the guild, a bot's message and a join notice are not heard."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "in a channel nobody named", channel_id=ELSEWHERE)
        discord.user_says("999", "beep", channel_id=ALLOWED, bot=True)
        discord.user_says(OWNER, "", channel_id=ALLOWED, message_type=7)  # a member joined
        discord.user_says(OWNER, "in the channel", channel_id=ALLOWED)
        await discord.await_sent(1)
        discord.user_says(OWNER, "in the thread", channel_id=THREAD)
        sent = await discord.await_sent(2)
    assert [(m.channel_id, m.content) for m in sent] == [
        (ALLOWED, "answer to in the channel"),
        (THREAD, "answer to in the thread"),
    ]
    assert [said(r.body) for r in model_server.requests] == ["in the channel", "in the thread"]


async def test_an_unknown_sender_is_paired_before_anything_reaches_the_model(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """A stranger's DM is answered with a pairing code; once the owner approves it, their
    next message reaches the model, in a session of their own."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord, session="per-user") as h:
        discord.user_says(STRANGER, "let me in", username="stranger")
        [asked] = await discord.await_sent(1)
        assert "pairing code" in asked.content.lower()
        assert model_server.requests == []
        code = next(line for line in asked.content.splitlines() if re.fullmatch(r"\w{4}-\w+", line))
        # The owner approves it as docs/discord.md says, with the CLI.
        config = write_cli_config(tmp_path, h.running.url)
        lines = ["wakeful pairing list", f"wakeful pairing approve discord {code}"]
        listed, approved = await anyio.to_thread.run_sync(_run_lines, config, lines)
        assert listed[0] == 0 and code in listed[1] and "discord" in listed[1], listed
        assert approved[0] == 0, approved
        await discord.await_sent(2)  # "you're paired"
        discord.user_says(STRANGER, "now?", username="stranger")
        [*_, reply] = await discord.await_sent(3)
        own_session = await h.trajectory(f"discord:dc:{STRANGER}")
    assert (reply.channel_id, reply.content) == (dm_channel_of(STRANGER), "answer to now?")
    assert [said(r.body) for r in model_server.requests] == ["now?"]
    assert [m["role"] for m in own_session][-2:] == ["user", "assistant"]


async def test_stop_from_discord_closes_the_model_stream(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """ "stop" while a long reply streams aborts it, as it does from POST /api/messages."""
    model_server.push(Reply(text="a very long story " * 50, hang=True))
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "tell me a long story")
        await model_server.await_requests(1)
        discord.user_says(OWNER, "stop")
        aborted = await model_server.await_abort(0)
    assert aborted.aborted


async def test_typing_shows_while_the_model_works(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """POST /channels/{id}/typing goes to the DM while its run is active."""
    model_server.push(Reply(text="slow " * 10, token_delay_s=0.1))
    # Renewed faster than the default 8 s so that a 1 s run shows it more than once.
    async with daemon(tmp_path, model_server, discord, typing_every_s=0.3):
        discord.user_says(OWNER, "think hard")
        [sent] = await discord.await_sent(1)
    assert len(discord.typing) >= 2 and {c for c, _ in discord.typing} == {OWNER_DM}
    assert discord.typing[0][1] < sent.received_at


async def test_a_long_reply_is_split_at_2000_characters(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """A reply over 2000 characters arrives as several messages, each within the limit,
    in order, together the whole reply."""
    text = "\n\n".join(f"**Part {i}**: " + "word " * 150 for i in range(6))
    model_server.push(Reply(text=text))
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "write a lot")
        pieces = split_message(text, MAX_MESSAGE_CHARS)
        sent = await discord.await_sent(len(pieces))
    assert len(pieces) >= 3
    assert [m.content for m in sent] == pieces
    assert all(len(m.content) <= MAX_MESSAGE_CHARS for m in sent)


@given(st.text(min_size=1, max_size=5000))
def test_splitting_keeps_every_piece_within_discords_limit_and_loses_nothing(text: str) -> None:
    """Every piece fits in 2000 characters; without the fences added to close and reopen
    a cut code block, the pieces hold the text's words in order."""
    pieces = split_message(text, MAX_MESSAGE_CHARS)
    assert all(0 < len(piece) <= MAX_MESSAGE_CHARS for piece in pieces if text.strip())
    joined = re.sub(r"\s+", "", "".join(pieces).replace("```", ""))
    assert joined == re.sub(r"\s+", "", (text.strip() or text).replace("```", ""))


async def test_a_dropped_connection_is_resumed_and_nothing_is_lost_or_doubled(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """The Gateway drops the connection; a message written meanwhile is replayed after the
    RESUME (session id and last sequence, at resume_gateway_url) and answered once."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord) as h:
        discord.user_says(OWNER, "before")
        await discord.await_sent(1)
        session = discord.session
        assert session is not None
        discord.drop()
        discord.user_says(OWNER, "while dropped")
        await discord.await_sent(2)
        discord.user_says(OWNER, "after")
        sent = await discord.await_sent(3)
        status = (await component_status(h))["chat.discord:dc"]
    assert [m.content for m in sent] == [
        "answer to before",
        "answer to while dropped",
        "answer to after",
    ]
    await discord.until(lambda: len(discord.ops(6)) == 1, what="a RESUME")
    [resume] = discord.ops(6)
    assert resume["d"]["session_id"] == session.id and resume["d"]["seq"] >= 2
    assert discord.connection_paths[-1].startswith(f"/resume/{session.id}")
    assert len(discord.ops(2)) == 1  # no second IDENTIFY
    assert (status["identifies"], status["resumes"]) == (1, 1)


async def test_reconnect_and_a_resumable_invalid_session_resume(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """RECONNECT (op 7) and INVALID_SESSION with d=true: the bot resumes the same session."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord):
        session = discord.session
        discord.send_reconnect()
        await discord.until(lambda: len(discord.ops(6)) == 1 and discord.connected())
        discord.send_invalid_session(resumable=True)
        await discord.until(lambda: len(discord.ops(6)) == 2 and discord.connected(), 15)
        discord.user_says(OWNER, "still there?")
        [sent] = await discord.await_sent(1)
    assert sent.content == "answer to still there?"
    assert discord.session is session and len(discord.ops(2)) == 1


async def test_an_invalid_session_identifies_again_and_fetches_what_was_missed(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """INVALID_SESSION d=false: a new IDENTIFY after a short wait; what was said while no
    session was open is fetched after the last message handled, and answered once."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord) as h:
        discord.user_says(OWNER, "first")
        await discord.await_sent(1)
        discord.send_invalid_session(resumable=False)
        discord.user_says(OWNER, "while no session")  # only in the DM's history
        await discord.until(lambda: len(discord.ops(2)) == 2 and discord.connected(), 15)
        sent = await discord.await_sent(2)
        status = (await component_status(h))["chat.discord:dc"]
    assert [m.content for m in sent] == ["answer to first", "answer to while no session"]
    assert status["caught_up"] >= 1
    assert [said(r.body) for r in model_server.requests] == ["first", "while no session"]


async def test_a_zombie_connection_without_heartbeat_acks_is_replaced(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """No ACK for a heartbeat: at the next beat the bot closes and resumes."""
    discord.heartbeat_ms = 200  # Discord's is 41 s; the test waits for two beats
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord) as h:
        await discord.until(lambda: len(discord.ops(1)) >= 1)
        discord.withhold_acks = True
        await discord.until(lambda: len(discord.ops(6)) >= 1, what="a RESUME")
        discord.withhold_acks = False
        await discord.until(discord.connected)
        discord.user_says(OWNER, "alive?")
        [sent] = await discord.await_sent(1)
        status = (await component_status(h))["chat.discord:dc"]
    assert sent.content == "answer to alive?"
    assert status["zombies"] >= 1
    beats = discord.ops(1)
    assert all(beat["d"] is None or isinstance(beat["d"], int) for beat in beats)


async def test_a_429_is_waited_out_and_the_reply_arrives_once(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """POST messages answers 429 with retry_after (global too): retried after it, once."""
    model_server.push(Reply(text="eventually"))
    discord.fail("429", paths=r"^POST .*/messages$", retry_after=0.3, is_global=True)
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "hello")
        await discord.until(lambda: any(c.status == 429 for c in discord.calls))
        discord.recover()
        [sent] = await discord.await_sent(1)
    assert sent.content == "eventually"
    limited = [c for c in discord.calls if c.status == 429]
    posted = [c for c in discord.calls if c.status == 200 and c.path.endswith("/messages")]
    assert posted[0].at - limited[0].at >= 0.3  # not before retry_after


async def test_the_rate_limit_headers_are_kept_without_earning_a_429(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """A bucket of 2 per second per channel: a reply in 4 pieces waits for the reset the
    headers announce instead of being refused."""
    discord.bucket = (2, 1.0)
    text = "\n\n".join("word " * 390 for _ in range(4))
    model_server.push(Reply(text=text))
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "a lot")
        sent = await discord.await_sent(4, timeout_s=20)
    assert [m.content for m in sent] == split_message(text, MAX_MESSAGE_CHARS)
    assert not [c for c in discord.calls if c.status == 429]


async def test_an_outage_shows_in_health_and_the_bot_recovers(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """Discord down at start (502): the daemon serves, health says the gateway fails; once
    Discord is back the bot connects and answers."""
    model_server.responder = echo
    discord.fail("down")
    entry = bot_config(discord, tmp_path, allowed_user_ids=[OWNER])
    settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"discord": [entry]})
    async with harness(settings) as h:
        await discord.until(lambda: len(discord.calls) >= 2)
        health = (await component_status(h))["components"]["chat.discord:dc"]
        assert not health["ok"] and "gateway" in health["detail"]
        discord.recover()
        await discord.until(discord.connected)
        discord.user_says(OWNER, "are you there")
        [sent] = await discord.await_sent(1)
        health = (await component_status(h))["components"]["chat.discord:dc"]
    assert sent.content == "answer to are you there"
    assert health["ok"]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_a_restart_fetches_what_was_said_while_down(
    backend: str,
    tmp_path: Path,
    model_server: FakeModelServer,
    discord: FakeDiscord,
    request: pytest.FixtureRequest,
) -> None:
    """Messages written while the daemon was stopped (a DM, the allowed channel) are fetched
    after the stored last message id and answered once; nothing before them again."""
    model_server.responder = echo
    store: dict[str, Any] = {}
    if backend == "redis":
        prefix = request.getfixturevalue("redis_prefix")
        store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix}
    # Two owners, a session each: their messages are answered apart, not in one batch.
    bot = {"allowed_user_ids": [OWNER, OTHER_OWNER], "session": "per-user", "store": store}
    async with daemon(tmp_path, model_server, discord, **bot):
        discord.user_says(OWNER, "first")
        discord.user_says(OTHER_OWNER, "in the channel", channel_id=ALLOWED)
        await discord.await_sent(2)
    discord.user_says(OWNER, "second, while the daemon is down")
    discord.user_says(OTHER_OWNER, "channel, while down", channel_id=ALLOWED)
    async with daemon(tmp_path, model_server, discord, **bot):
        sent = await discord.await_sent(4)
    assert sorted((m.channel_id, m.content) for m in sent[2:]) == sorted(
        [
            (ALLOWED, "answer to channel, while down"),
            (OWNER_DM, "answer to second, while the daemon is down"),
        ]
    )
    assert sorted(said(r.body) for r in model_server.requests) == sorted(
        ["first", "in the channel", "second, while the daemon is down", "channel, while down"]
    )
    fetched = [c for c in discord.calls if c.method == "GET" and c.path.endswith("/messages")]
    assert fetched, "the second start fetched the channels' histories"


async def test_the_bot_never_answers_its_own_messages(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """Discord sends the bot's own posts back as MESSAGE_CREATE: they are not heard."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, discord):
        discord.user_says(OWNER, "one")
        await discord.await_sent(1)
        discord.user_says(OWNER, "two")
        await discord.await_sent(2)
    assert [said(r.body) for r in model_server.requests] == ["one", "two"]
    assert all(m.channel_id == OWNER_DM for m in discord.sent) and BOT_ID


async def test_the_channel_on_its_defaults_answers_a_dm(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """Every key on its default but the address (the fake's, not discord.com): the bot
    connects, is answered and answers, and its health is ok."""
    model_server.responder = echo
    token = tmp_path / "token"
    token.write_text(discord.token)
    entry = {"name": "dc", "bot_token_file": str(token), "api_base": discord.api_base,
             "allowed_user_ids": [OWNER]}  # fmt: skip
    settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"discord": [entry]})
    async with harness(settings) as h:
        await discord.until(discord.connected)
        discord.user_says(OWNER, "defaults")
        [sent] = await discord.await_sent(1)
        health = (await component_status(h))["components"]["chat.discord:dc"]
    assert sent.content == "answer to defaults"
    assert health["ok"] and "connected" in health["detail"]


async def test_intents_the_portal_did_not_allow_show_in_health_until_switched_on(
    tmp_path: Path, model_server: FakeModelServer, discord: FakeDiscord
) -> None:
    """Close code 4014: health says which switch to turn on; the daemon stays up and the
    bot connects once it is on."""
    model_server.responder = echo
    discord.message_content_allowed = False
    entry = bot_config(discord, tmp_path, allowed_user_ids=[OWNER])
    settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"discord": [entry]})
    async with harness(settings) as h:
        await discord.until(lambda: len(discord.ops(2)) >= 1)
        await discord.until(lambda: not discord.connected() and bool(discord.connection_paths))
        detail = ""
        with anyio.fail_after(10):
            while "4014" not in detail:
                detail = (await component_status(h))["components"]["chat.discord:dc"]["detail"]
                await anyio.sleep(0.05)  # health has no long poll
        assert "MESSAGE CONTENT INTENT" in detail
        discord.message_content_allowed = True
        await discord.until(discord.connected)
        discord.user_says(OWNER, "now?")
        [sent] = await discord.await_sent(1)
    assert sent.content == "answer to now?"
