"""``[[chat.xmpp]]``: what loads (the docs' example as written, the defaults), one clear
line for what cannot, and the promise of the message limit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import slixmpp
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.daemon_process import free_port, run_to_exit, write_config
from wakeful.app.config import ConfigError, load_settings
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.xmpp.config import XmppConfig
from wakeful.channels.xmpp.outgoing import MAX_CHARS

ROOT = Path(__file__).resolve().parent.parent
GOOD = """
[[chat.xmpp]]
name = "home"
jid = "Wakeful@example.org"
password_file = "/etc/wakeful/xmpp-password"
allowed_jids = ["Me@example.org"]
"""


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "wakeful.toml"
    path.write_text(text)
    return load_settings(path)


def test_an_account_loads_with_its_defaults_and_they_require_tls(tmp_path: Path) -> None:
    settings = load(tmp_path, GOOD)
    [account] = settings.chat.xmpp  # type: ignore[attr-defined]
    assert isinstance(account, XmppConfig)
    assert account.jid == "wakeful@example.org" and account.allowed_jids == ["me@example.org"]
    assert account.session == "main" and account.full_jid == "wakeful@example.org/wakeful-home"
    assert account.server == "" and account.port == 5222  # DNS SRV of the JID's domain
    assert account.allow_plaintext is False and account.direct_tls is False
    assert account.ca_file is None  # the system's CAs


def test_the_documented_example_loads_as_written(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "xmpp.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        settings = load(tmp_path, block)
        assert settings.chat.xmpp, block  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('jid = "Wakeful@example.org"', 'jid = "wakeful"'), "not a bare JID"),
        (('"Me@example.org"', '"me@example.org/phone"'), "no /resource"),
        (("allowed_jids", "allow_plaintext = true\nallowed_jids"), "only for a server on loopback"),
        (
            ("allowed_jids", 'server = "xmpp.example.org"\nallow_plaintext = true\nallowed_jids'),
            "only for a server on loopback",
        ),
        (
            (
                "allowed_jids",
                'server = "::1"\nallow_plaintext = true\ndirect_tls = true\nallowed_jids',
            ),
            "exclude each other",
        ),
        (('password_file = "/etc/wakeful/xmpp-password"', ""), "password_file"),
        (('name = "home"', 'name = "Home Server"'), "chat.xmpp"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_key(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, GOOD.replace(*change))
    message = str(info.value)
    assert expected in message and "chat.xmpp" in message, message
    assert "\n" not in message.strip(), message


def test_two_accounts_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"chat\.xmpp names must be unique"):
        load(tmp_path, GOOD + GOOD)


def test_plaintext_on_loopback_is_accepted(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        GOOD.replace("allowed_jids", 'server = "127.0.0.1"\nallow_plaintext = true\nallowed_jids'),
    )
    assert settings.chat.xmpp[0].allow_plaintext  # type: ignore[attr-defined]


def test_a_missing_password_file_stops_the_daemon_with_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "data", None, free_port())
    missing = tmp_path / "nowhere" / "xmpp-password"
    config.write_text(config.read_text() + GOOD.replace("/etc/wakeful/xmpp-password", str(missing)))
    done = run_to_exit(config)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if "password_file" in line]
    assert len(lines) == 1, done.stderr
    assert "chat.xmpp[home].password_file" in lines[0] and str(missing) in lines[0]


# Text a split must keep: markup XML escapes (5 bytes for '&'), 4-byte characters, fences.
PIECES = st.sampled_from(["&", "<", ">", "😀", "wörd ", "word ", " ", "\n", "\n\n", "```", "x"])


@settings(max_examples=40, deadline=None)
@given(st.lists(PIECES, max_size=6000).map("".join))
def test_every_piece_fits_a_64_kib_stanza_and_the_words_are_kept(text: str) -> None:
    """At the channel's limit every piece is within it and, sent as a message stanza,
    within 64 KiB (the smallest common server limit); all but whitespace arrives, in order."""
    pieces = split_message(text, MAX_CHARS)
    for piece in pieces:
        assert len(piece) <= MAX_CHARS
        stanza = slixmpp.Message()
        stanza["to"], stanza["type"], stanza["body"] = "me@example.org", "chat", piece
        stanza["from"] = "wakeful@example.org/wakeful-home"
        assert len(str(stanza).encode()) < 64 * 1024
    if "```" not in text:  # (a fence cut in two is closed and reopened: more backticks)
        assert "".join("".join(pieces).split()) == "".join(text.split())
