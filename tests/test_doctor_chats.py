"""`wakeful doctor` asks each configured Discord, WhatsApp, Signal, XMPP and IRC account's
credential of its platform, the way the channel itself would: against the same fakes
and real servers the channels' own tests use (the Discord and Graph API fakes, the
fake signal-cli, a real Prosody, a real ngircd). Per platform: a good credential is one
ok line, a refused one a FAIL line with its fix; no secret is printed, and a platform
that is not configured says nothing."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import free_port, write_config
from tests.fakes.discord_api import FakeDiscord, bot_config
from tests.fakes.model_server import FakeModelServer
from tests.fakes.signal_cli import FakeSignalCli, FakeSignalCliSocket
from tests.fakes.whatsapp_api import FakeGraphApi
from tests.irc_daemon import irc_config
from tests.ngircd_server import Ngircd
from tests.prosody_server import ProsodyServer, prosody  # noqa: F401 (a fixture)
from tests.support.chat_config import toml_table
from tests.test_doctor import doctor, private
from tests.test_signal_channel import account_config
from tests.test_whatsapp_channel import whatsapp_entry
from tests.xmpp_daemon import PASSWORDS, xmpp_entry

PLATFORMS = ("telegram", "slack", "matrix", "discord", "whatsapp", "signal", "xmpp", "irc")


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


def secret(path: Path, value: str) -> str:
    path.write_text(value + "\n")
    path.chmod(0o600)
    return str(path)


def doctor_chats(
    tmp_path: Path, model: FakeModelServer, platform: str, entries: list[dict[str, Any]]
) -> tuple[dict[str, str], list[str]]:
    """doctor run on a config holding ``entries`` of one platform: its chat lines by
    account name, and every line."""
    data = private(tmp_path / "data")
    config = write_config(data, model.base_url, free_port())
    with config.open("a") as text:
        for entry in entries:
            text.write(toml_table(f"chat.{platform}", entry))
    private(data)
    code, lines = doctor(config)
    chat = [line for line in lines if any(f"chat.{p} " in line for p in PLATFORMS)]
    # Only the configured platform is spoken of, one line per account.
    assert all(f"chat.{platform} '" in line for line in chat), lines
    assert len(chat) == len(entries), lines
    assert code == (0 if all(line.startswith("ok ") for line in lines) else 1)
    return {line.split("'")[1]: line for line in chat}, lines


def test_discord_a_good_bot_token_is_ok_and_a_refused_one_fails_with_the_fix(
    tmp_path: Path, model: FakeModelServer
) -> None:
    with FakeDiscord() as discord:
        good = bot_config(discord, tmp_path, name="good")
        refused = good | {
            "name": "refused",
            "bot_token_file": secret(tmp_path / "refused-token", "MTA1wrong.token.Zz"),
        }
        chat, lines = doctor_chats(tmp_path, model, "discord", [good, refused])
    assert chat["good"].startswith("ok   chat.discord 'good':"), lines
    assert "the credential is accepted (wakeful)" in chat["good"]
    assert chat["refused"].startswith("FAIL chat.discord 'refused':")
    assert "Discord refused the token (HTTP 401" in chat["refused"]
    assert f"fix: put a valid credential in {tmp_path / 'refused-token'}" in chat["refused"]
    shown = "\n".join(lines)
    assert discord.token not in shown and "MTA1wrong" not in shown


def test_whatsapp_a_good_access_token_is_ok_and_a_refused_one_fails_with_the_fix(
    tmp_path: Path, model: FakeModelServer
) -> None:
    with FakeGraphApi() as graph:
        good = whatsapp_entry(tmp_path, graph.api_base, name="good")
        refused = good | {
            "name": "refused",
            "access_token_file": secret(tmp_path / "refused-token", "EAAGwrong-token"),
        }
        chat, lines = doctor_chats(tmp_path, model, "whatsapp", [good, refused])
    assert chat["good"].startswith("ok   chat.whatsapp 'good':"), lines
    assert "the credential is accepted (" in chat["good"]
    assert chat["refused"].startswith("FAIL chat.whatsapp 'refused':")
    assert "the access token was refused" in chat["refused"] and "190" in chat["refused"]
    assert f"fix: put a valid credential in {tmp_path / 'refused-token'}" in chat["refused"]
    shown = "\n".join(lines)
    assert graph.token not in shown and "EAAGwrong" not in shown


def test_signal_a_registered_account_is_ok_and_one_the_daemon_lacks_fails(
    tmp_path: Path, model: FakeModelServer
) -> None:
    """Over HTTP with an auth token (whose file is the secret), and over a unix socket."""
    socket_path = tmp_path / "signal.sock"
    with FakeSignalCli() as http, FakeSignalCliSocket(unix_path=socket_path) as unix:
        token = secret(tmp_path / "signal-token", "signal-proxy-token-77")
        good = account_config(http, name="good", account=http.account, auth_token_file=token)
        by_socket = account_config(unix, name="socket", account=unix.account)
        unknown = account_config(http, name="unknown", account="+15550009999")
        chat, lines = doctor_chats(tmp_path, model, "signal", [good, by_socket, unknown])
        assert "Bearer signal-proxy-token-77" in http.authorizations  # the token was sent
    assert chat["good"].startswith("ok   chat.signal 'good':"), lines
    assert f"{http.account} on signal-cli" in chat["good"]
    assert chat["socket"].startswith("ok   chat.signal 'socket':"), lines
    assert chat["unknown"].startswith("FAIL chat.signal 'unknown':")
    assert "Specified account does not exist" in chat["unknown"]
    assert "fix: start signal-cli's daemon" in chat["unknown"]
    assert "signal-proxy-token-77" not in "\n".join(lines)


def test_xmpp_the_right_password_logs_in_and_a_wrong_one_fails_with_the_fix(
    tmp_path: Path,
    model: FakeModelServer,
    prosody: ProsodyServer,  # noqa: F811 (the fixture)
) -> None:
    bot = prosody.register("bot", PASSWORDS["bot"])
    good_file = secret(tmp_path / "xmpp-password", PASSWORDS["bot"])
    wrong_file = secret(tmp_path / "xmpp-wrong", "not-the-bot-password")
    good = xmpp_entry(prosody, bot, [], Path(good_file)) | {"name": "good"}
    wrong = xmpp_entry(prosody, bot, [], Path(wrong_file)) | {"name": "wrong"}
    chat, lines = doctor_chats(tmp_path, model, "xmpp", [good, wrong])
    assert chat["good"].startswith("ok   chat.xmpp 'good':"), lines
    assert f"the credential is accepted ({bot}/" in chat["good"]
    assert chat["wrong"].startswith("FAIL chat.xmpp 'wrong':")
    assert "log-in refused" in chat["wrong"]
    assert f"put the account's password in {wrong_file}" in chat["wrong"]
    shown = "\n".join(lines)
    assert PASSWORDS["bot"] not in shown and "not-the-bot-password" not in shown


def test_irc_the_right_server_password_registers_and_a_wrong_one_fails_with_the_fix(
    tmp_path: Path, model: FakeModelServer
) -> None:
    with Ngircd(tmp_path / "ngircd", password="irc-server-pass-5") as ircd:
        good = irc_config(
            ircd,
            name="good",
            server_password_file=secret(tmp_path / "irc-pass", "irc-server-pass-5"),
        )
        wrong = irc_config(
            ircd,
            name="wrong",
            nick="wakeful2",
            server_password_file=secret(tmp_path / "irc-wrong", "irc-wrong-pass-6"),
        )
        chat, lines = doctor_chats(tmp_path, model, "irc", [good, wrong])
    assert chat["good"].startswith("ok   chat.irc 'good':"), lines
    assert f"(wakeful on 127.0.0.1:{ircd.port})" in chat["good"]
    assert chat["wrong"].startswith("FAIL chat.irc 'wrong':")
    assert "the server refused the login" in chat["wrong"]
    assert "fix: check server, port, tls and the passwords" in chat["wrong"]
    shown = "\n".join(lines)
    assert "irc-server-pass-5" not in shown and "irc-wrong-pass-6" not in shown


def test_an_irc_server_that_is_not_listening_fails_in_one_line(
    tmp_path: Path, model: FakeModelServer
) -> None:
    entry = {"name": "down", "server": "127.0.0.1", "port": free_port(), "tls": False}
    entry |= {"nick": "wakeful"}
    chat, lines = doctor_chats(tmp_path, model, "irc", [entry])
    assert chat["down"].startswith("FAIL chat.irc 'down': cannot connect to 127.0.0.1:"), lines
    assert os.linesep not in chat["down"]


@pytest.mark.parametrize("platform", ["irc", "signal", "telegram", "slack", "matrix"])
def test_a_server_that_accepts_and_never_answers_fails_within_the_checks_bound(
    platform: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener that takes the connection and says nothing: the check gives up at its
    bound, one line, instead of hanging doctor or onboard (the HTTP clients' own timeouts
    are longer, and a bound the check does not keep fails this with another message)."""
    from wakeful.channels.irc.config import IrcConfig
    from wakeful.cli import chat_checks

    # Changed from the default (20 s) so the test takes a second; the default itself is
    # what test_an_irc_server_that_is_not_listening_fails_in_one_line runs with.
    monkeypatch.setattr(chat_checks, "CHECK_TIMEOUT_S", 0.5)
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        checks = {
            "irc": lambda: chat_checks.check_irc(
                IrcConfig(name="mute", server="127.0.0.1", port=port, tls=False, nick="w"),
                None,
                None,
            ),
            "signal": lambda: chat_checks.check_signal(f"tcp://127.0.0.1:{port}", None, None),
            "telegram": lambda: chat_checks.check_telegram(url, "123:token"),
            "slack": lambda: chat_checks.check_slack(url, "xoxb-token"),
            "matrix": lambda: chat_checks.check_matrix(url, "syt_token"),
        }
        with pytest.raises(chat_checks.CheckFailed) as failed:
            checks[platform]()
    where = {"irc": f"127.0.0.1:{port}", "signal": f"tcp://127.0.0.1:{port}"}.get(platform, url)
    assert str(failed.value) == f"{where} did not answer within 0.5 s"


def test_every_chat_platform_has_its_check_in_the_one_table() -> None:
    """doctor and onboard ask the platforms through one table: a platform added to
    [chat] without a check there would go unchecked by both."""
    from wakeful.app.chat_section import ChatSection
    from wakeful.cli.chat_checks import CHAT_CHECKS, TokenCheck
    from wakeful.cli.onboard_args import TOKEN_ENV

    assert set(CHAT_CHECKS) == set(ChatSection.model_fields) == set(PLATFORMS)

    # What onboard adds is a one-token platform of the table.
    onboarded = [platform for platform in TOKEN_ENV if platform in CHAT_CHECKS]
    assert onboarded == ["telegram", "slack", "matrix", "discord"]
    assert all(isinstance(CHAT_CHECKS[platform], TokenCheck) for platform in onboarded)
