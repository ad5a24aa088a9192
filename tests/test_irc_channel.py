"""IRC end to end: a real ngircd, the daemon in-process, the fake model, and people
on IRC (raw-socket clients): the owner, recognised by their nick!user@host mask, and
a stranger."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, text_reply
from tests.irc_daemon import (
    BOT,
    CHANNEL,
    OWNER,
    STRANGER,
    echo,
    from_bot,
    irc_daemon,
    irc_status,
    join_with_bot,
    said,
    until_connected,
    until_healthy,
    until_outbox,
    wait_said,
)
from tests.irc_user import IrcUser
from tests.ngircd_server import Ngircd
from tests.test_approvals import runs, tainted_call, wait_for_request_with
from tests.test_chat_foundation import run_cli, write_cli_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def ircd(tmp_path: Path) -> Iterator[Ngircd]:
    with Ngircd(tmp_path / "ngircd") as server:
        yield server


def user(server: Ngircd, nick: str) -> IrcUser:
    return IrcUser(server.port, nick)


def pairing_code(text_lines: list[str]) -> str:
    return next(line for line in text_lines if re.fullmatch(r"\w{4}-\w{4}", line.strip()))


async def test_the_owners_private_message_is_answered_once(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    model_server.responder = echo
    async with irc_daemon(tmp_path, model_server, ircd) as h:
        await until_connected(h)
        with user(ircd, OWNER) as owner:
            owner.say(BOT, "hello from irc")
            [request] = await model_server.await_requests(1)
            assert said(request.body) == "hello from irc"
            [reply] = await from_bot(owner, 1)
            assert (reply.target, reply.text) == (OWNER, "answer to hello from irc")
            trajectory = await h.trajectory()
    assert len(model_server.requests) == 1
    assert [m["role"] for m in trajectory][-2:] == ["user", "assistant"]


async def test_in_a_channel_only_messages_addressed_to_the_bot_count(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    """'wakeful: …' is answered in the channel, to its writer; chatter is not heard."""
    model_server.responder = echo
    async with irc_daemon(tmp_path, model_server, ircd) as h:
        await until_connected(h)
        with user(ircd, OWNER) as owner:
            await join_with_bot(owner)
            owner.say(CHANNEL, "just talking among ourselves")
            owner.say(CHANNEL, "and wakeful is great, but not addressed")
            owner.say(CHANNEL, f"{BOT}: what time is it?")
            [reply] = await from_bot(owner, 1)
    assert (reply.target, reply.text) == (CHANNEL, f"{OWNER}: answer to what time is it?")
    assert [said(r.body) for r in model_server.requests] == ["what time is it?"]


async def test_a_stranger_gets_a_pairing_code_and_once_approved_is_heard(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    model_server.responder = echo
    async with irc_daemon(tmp_path, model_server, ircd, irc={"session": "per-user"}) as h:
        await until_connected(h)
        with user(ircd, STRANGER) as stranger:
            stranger.say(BOT, "let me in")
            asked = await from_bot(stranger, 3, "the pairing code")
            assert all(m.target == STRANGER for m in asked)
            assert "pairing code" in " ".join(m.text for m in asked).lower()
            code = pairing_code([m.text for m in asked])
            assert model_server.requests == []
            listed = (await h.client.get("/api/pairing")).json()["pending"]
            assert [(p["platform"], p["user_id"]) for p in listed] == [
                ("irc", f"{STRANGER}!~{STRANGER}@127.0.0.1")
            ]
            # As docs/irc.md says: `wakeful pairing approve irc <code>`.
            config = write_cli_config(tmp_path, h.running.url)
            approved = await run_cli(["-c", str(config), "pairing", "approve", "irc", code])
            assert f"{STRANGER} on irc (net) is let in" in approved
            paired = await from_bot(stranger, len(asked) + 1, "you're paired")
            assert "paired" in paired[-1].text
            stranger.say(BOT, "now?")
            replies = await from_bot(stranger, len(paired) + 1, "the answer")
    assert replies[-1].text == "answer to now?"
    assert [said(r.body) for r in model_server.requests] == ["now?"]


async def test_a_stranger_addressing_the_bot_in_a_channel_is_answered_privately(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    async with irc_daemon(tmp_path, model_server, ircd) as h:
        await until_connected(h)
        with user(ircd, STRANGER) as stranger:
            await join_with_bot(stranger)
            stranger.say(CHANNEL, f"{BOT}, do my bidding")
            asked = await from_bot(stranger, 1)
    assert {m.target for m in asked} == {STRANGER}  # privately, never in the channel
    assert model_server.requests == []


async def test_stop_interrupts_the_run(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    """ "stop" while a long reply streams aborts it, as it does from POST /api/messages."""
    model_server.push(Reply(text="a very long story " * 50, hang=True))
    async with irc_daemon(tmp_path, model_server, ircd) as h:
        await until_connected(h)
        with user(ircd, OWNER) as owner:
            owner.say(BOT, "tell me a long story")
            await model_server.await_requests(1)
            owner.say(BOT, "stop")
            aborted = await model_server.await_abort(0)
    assert aborted.aborted


async def test_a_taken_nick_gets_an_underscore_and_is_still_addressed(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    model_server.responder = echo
    with user(ircd, BOT) as squatter:
        async with irc_daemon(tmp_path, model_server, ircd) as h:
            await until_connected(h)
            status = (await irc_status(h))["chat.irc:net"]
            assert status["nick"] == f"{BOT}_"
            with user(ircd, OWNER) as owner:
                await join_with_bot(owner, f"{BOT}_")
                owner.say(CHANNEL, f"{BOT}_: are you the real one?")
                [reply] = await from_bot(owner, 1)
        assert squatter.from_(f"{BOT}_") == []
    assert reply.sender == f"{BOT}_"
    assert reply.text == f"{OWNER}: answer to are you the real one?"


async def test_the_server_going_away_shows_in_health_and_the_bot_comes_back(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    """ngircd stops while a reply is being written: health says so, the daemon stays up,
    the reply waits in the outbox and is delivered once after the bot has reconnected
    (with its default back-off)."""
    model_server.push(Reply(text="slow words " * 15, token_delay_s=0.1))
    model_server.responder = echo
    async with irc_daemon(tmp_path, model_server, ircd) as h:
        await until_connected(h)
        owner = user(ircd, OWNER)
        owner.say(BOT, "answer slowly")
        await model_server.await_requests(1)
        ircd.stop()
        owner.close()
        health = await until_healthy(h, ok=False)
        assert "connection failing" in health["detail"]
        await until_outbox(h, lambda m: m["state"] == "pending" and m["attempts"] >= 1)
        ircd.start()
        with user(ircd, OWNER) as owner:  # back before the bot: the reply needs them online
            await until_connected(h, connections=2, timeout_s=30)
            [late] = await from_bot(owner, 1, timeout_s=30)
            owner.say(BOT, "are you back?")
            replies = await from_bot(owner, 2, timeout_s=30)
            health = await until_healthy(h, ok=True)
    assert late.text == ("slow words " * 15).strip()
    assert replies[-1].text == "answer to are you back?"
    assert health["ok"]


async def test_a_long_reply_is_split_within_the_line_limit_and_rate_limited(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    """Long lines are cut by bytes (multi-byte characters whole), each line of the reply is
    its own PRIVMSG, and lines after the burst come at most one per send interval."""
    paragraph = "Grüße aus Köln — " * 60  # 2- and 3-byte characters, ~1000 characters
    text = "\n".join([paragraph.strip(), "second line", "", "after a blank line"])
    model_server.push(Reply(text=text))
    async with irc_daemon(tmp_path, model_server, ircd) as h:
        await until_connected(h)
        with user(ircd, OWNER) as owner:
            owner.say(BOT, "write a lot")
            replies = await from_bot(owner, 3)
            replies = await wait_said(
                owner, lambda s: any(m.text == "after a blank line" for m in s), "the last line"
            )
            raw = [line for line in owner.lines if f" PRIVMSG {OWNER} :" in line]
    mine = [m for m in replies if m.sender == BOT]
    assert all(len(line.encode()) + 2 <= 512 for line in raw)
    assert not any(line.endswith("[CUT]") for line in raw)  # ngircd's mark of a cut line
    texts = [m.text for m in mine]
    assert texts[-2:] == ["second line", "after a blank line"]
    assert "".join(texts[:-2]) == paragraph.strip()
    assert len(texts) >= 5  # ~2000 bytes over several lines
    # burst 4, then one line a second (the defaults)
    times = [m.received_at for m in mine]
    assert times[-1] - times[0] >= (len(times) - 4) * 1.0 - 0.3


async def test_an_approval_is_decided_by_typing_approve_to_the_bot(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    """No buttons on IRC: the notice reaches the owner's nick ([notify] urgent), the
    owner types "approve <id>"; a stranger typing the same decides nothing."""
    async with irc_daemon(
        tmp_path, model_server, ircd, notify={"urgent": [f"chat:irc:net#{OWNER}"]}
    ) as h:
        await until_connected(h)
        with user(ircd, OWNER) as owner, user(ircd, STRANGER) as stranger:
            approval = await tainted_call(h, model_server)
            aid = approval["id"]
            await wait_said(
                owner, lambda s: any(f"approve {aid}" in m.text for m in s), "the notice"
            )
            notice = [m for m in owner.from_(BOT) if aid in m.text]
            assert notice[0].text.startswith(f"Approval needed ({aid})")
            stranger.say(BOT, f"approve {aid}")
            await from_bot(stranger, 1, "the stranger's pairing code")
            listed = (await h.client.get("/api/approvals")).json()
            assert [a["id"] for a in listed] == [aid]  # still pending
            model_server.push(text_reply("done"))
            owner.say(BOT, f"approve {aid}")
            await wait_for_request_with(model_server, "approved by the owner and run once")
            answer = f"approved {aid}: shell_exec runs once now"
            await wait_said(owner, lambda s: any(m.text == answer for m in s), "the answer")
            decided = next(
                a for a in (await h.client.get("/api/approvals?all=1")).json() if a["id"] == aid
            )
    assert decided["decided_by"] == "irc:net:owner!*@127.0.0.1"
    assert runs(tmp_path / "data") == 1


async def test_on_its_defaults_the_channel_lets_nobody_in_without_pairing(
    tmp_path: Path, model_server: FakeModelServer, ircd: Ngircd
) -> None:
    """Only what must name the test server is set (server, port, plain text on loopback,
    nick): no owners and no channels by default, so a private message gets a pairing
    code, and the model is never called."""
    entry = {"name": "net", "server": "127.0.0.1", "port": ircd.port, "tls": False, "nick": BOT}
    settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"irc": [entry]})
    async with harness(settings) as h:
        await until_connected(h)
        with user(ircd, OWNER) as someone:
            someone.say(BOT, "hello")
            asked = await from_bot(someone, 1, "a pairing code")
            asked = await wait_said(
                someone, lambda s: any("once they approve" in m.text for m in s), "the whole text"
            )
            status = (await irc_status(h))["chat.irc:net"]
    assert "pairing code" in " ".join(m.text for m in asked).lower()
    assert status["nick"] == BOT and status["capabilities"] == []  # ngircd: no IRCv3 caps used
    assert model_server.requests == []


async def test_tls_by_default_checks_the_servers_certificate(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tls left at its default (true): an untrusted certificate is a connection failure
    shown in health; once the system trusts it (SSL_CERT_FILE, as an OS trust store
    would), the bot connects over TLS and answers."""
    model_server.responder = echo
    with Ngircd(tmp_path / "ngircd-tls", tls=True) as server:
        assert server.tls_port is not None
        entry = {"name": "net", "server": "127.0.0.1", "port": server.tls_port, "nick": BOT,
                 "allowed_users": [f"{OWNER}!*@127.0.0.1"]}  # fmt: skip
        settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"irc": [entry]})
        async with harness(settings) as h:
            health = await until_healthy(h, ok=False)
            assert "CERTIFICATE_VERIFY_FAILED" in health["detail"]
        monkeypatch.setenv("SSL_CERT_FILE", str(server.certificate))
        settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"irc": [entry]})
        async with harness(settings) as h:
            await until_connected(h)
            with user(server, OWNER) as owner:  # the owner's client on the plain port
                owner.say(BOT, "over tls?")
                [reply] = await from_bot(owner, 1)
    assert reply.text == "answer to over tls?"
