"""SASL PLAIN and account-tag, against the scripted server (no Debian ircd does SASL
without services): the login, its refusal, a server without SASL, and an owner known
by their services account end to end."""

from __future__ import annotations

import base64
from pathlib import Path

import anyio
import pytest

from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply
from tests.irc_daemon import echo, said
from tests.irc_scripted_server import ScriptedIrcd, scripted_ircd
from wakeful.channels.irc.connection import IrcConnection, IrcError, Login

pytestmark = pytest.mark.anyio

PASSWORD = "correct horse battery staple"


def login(password: str | None, **extra: str) -> Login:
    return Login("wakeful", "wakeful", "wakeful agent", sasl_password=password, **extra)


async def test_sasl_plain_logs_in_before_registration_ends() -> None:
    server = ScriptedIrcd(accounts={"wakeful": PASSWORD})
    async with (
        scripted_ircd(server),
        IrcConnection.open("127.0.0.1", server.port, tls=False, login=login(PASSWORD)),
    ):
        pass
    assert server.logged_in == "wakeful"
    sent = server.received
    assert sent[0] == "CAP LS 302"
    assert "CAP REQ :sasl account-tag message-tags" in sent
    assert sent.index("AUTHENTICATE PLAIN") < sent.index("CAP END")
    payload = base64.b64encode(f"wakeful\0wakeful\0{PASSWORD}".encode()).decode()
    assert f"AUTHENTICATE {payload}" in sent


async def test_a_password_of_more_than_400_base64_bytes_goes_in_chunks() -> None:
    long_password = "p" * 300  # svc\0svc\0password: 308 bytes, 412 of base64
    server = ScriptedIrcd(accounts={"svc": long_password})
    async with (
        scripted_ircd(server),
        IrcConnection.open(
            "127.0.0.1", server.port, tls=False, login=login(long_password, sasl_username="svc")
        ),
    ):
        pass
    chunks = [line for line in server.received if line.startswith("AUTHENTICATE ")][1:]
    assert [len(c) - len("AUTHENTICATE ") for c in chunks[:2]] == [400, 12]
    assert server.logged_in == "svc"


async def test_a_refused_password_fails_the_connection() -> None:
    async with scripted_ircd(ScriptedIrcd(accounts={"wakeful": "other"})) as server:
        with pytest.raises(IrcError, match="SASL login refused \\(904\\)"):
            async with IrcConnection.open(
                "127.0.0.1", server.port, tls=False, login=login(PASSWORD)
            ):
                pass
    assert "CAP END" not in server.received  # never registered unauthenticated


async def test_a_server_without_sasl_is_refused_when_a_password_is_set() -> None:
    async with scripted_ircd(ScriptedIrcd(caps="multi-prefix")) as server:
        with pytest.raises(IrcError, match="offers no SASL PLAIN"):
            async with IrcConnection.open(
                "127.0.0.1", server.port, tls=False, login=login(PASSWORD)
            ):
                pass


async def test_an_owner_known_by_services_account_reaches_the_model_and_others_pair(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """account-tag: whatever the nick and host, account alice is the owner; a user
    logged in as mallory — even under the owner's nick — gets a pairing code. The
    password is never logged."""
    model_server.responder = echo
    (tmp_path / "sasl").write_text(PASSWORD + "\n")
    async with scripted_ircd(ScriptedIrcd(accounts={"wakeful": PASSWORD})) as server:
        entry = {
            "name": "net", "server": "127.0.0.1", "port": server.port, "tls": False,
            "nick": "wakeful", "allowed_users": ["account:alice"],
            "sasl_password_file": str(tmp_path / "sasl"),
        }  # fmt: skip
        settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"irc": [entry]})
        async with harness(settings):
            with anyio.fail_after(10):
                await server.registered.wait()
            await server.push("@account=alice :whoever!~x@198.51.100.4 PRIVMSG wakeful :hi")
            [request] = await model_server.await_requests(1)
            assert said(request.body) == "hi"
            await server.push("@account=mallory :alice!~alice@127.0.0.1 PRIVMSG wakeful :me too")
            await server.until(
                lambda lines: (
                    "PRIVMSG whoever :answer to hi" in lines
                    and any("pairing code" in line for line in lines)
                )
            )
    assert server.logged_in == "wakeful"
    to_mallory = " ".join(line for line in server.received if line.startswith("PRIVMSG alice :"))
    assert "pairing code" in to_mallory.lower()
    assert len(model_server.requests) == 1
    logged = capsys.readouterr()
    assert "irc SASL login succeeded" in logged.out
    assert PASSWORD not in logged.out + logged.err


async def test_typing_is_sent_as_a_client_tag_where_the_server_passes_them(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """message-tags acknowledged: while the model works the bot sends
    ``@+typing=active TAGMSG <nick>`` before its reply (IRCv3 typing)."""
    model_server.push(Reply(text="slow " * 20, token_delay_s=0.2))
    async with scripted_ircd(ScriptedIrcd(caps="message-tags")) as server:
        entry = {
            "name": "net", "server": "127.0.0.1", "port": server.port, "tls": False,
            "nick": "wakeful", "allowed_users": ["owner!*@127.0.0.1"],
        }  # fmt: skip
        settings = daemon_settings(tmp_path / "data", model_server.base_url, chat={"irc": [entry]})
        async with harness(settings):
            with anyio.fail_after(10):
                await server.registered.wait()
            await server.push(":owner!~owner@127.0.0.1 PRIVMSG wakeful :think")
            await server.until(lambda lines: any(x.startswith("PRIVMSG owner :") for x in lines))
    typing = server.received.index("@+typing=active TAGMSG owner")
    reply = next(i for i, x in enumerate(server.received) if x.startswith("PRIVMSG owner :"))
    assert typing < reply
    assert "CAP REQ message-tags" in server.received  # no SASL asked: none configured
