"""``[[chat.irc]]``: the documented example loads as written; a bad entry is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from wakeful.app.config import ConfigError, load_settings
from wakeful.channels.irc.config import IrcConfig

DOC = Path(__file__).resolve().parent.parent / "docs" / "irc.md"


def doc_example() -> str:
    """The ```toml block of docs/irc.md, without the indentation of its list item."""
    block = DOC.read_text().split("```toml\n", 1)[1].split("```", 1)[0]
    return "\n".join(line.strip() for line in block.splitlines()) + "\n"


def load(tmp_path: Path, text: str) -> IrcConfig:
    path = tmp_path / "wakeful.toml"
    path.write_text(text)
    [entry] = load_settings(path).chat.irc  # type: ignore[attr-defined]
    assert isinstance(entry, IrcConfig)
    return entry


def test_the_documented_example_loads_with_its_defaults(tmp_path: Path) -> None:
    entry = load(tmp_path, doc_example())
    assert (entry.server, entry.port, entry.tls, entry.nick) == (
        "irc.libera.chat", 6697, True, "wakeful"
    )  # fmt: skip
    assert entry.allowed_users == ["account:alice"]
    assert (entry.send_burst, entry.send_interval_s) == (4, 1.0)
    assert (entry.retry_min_s, entry.retry_max_s) == (2.0, 120.0)
    assert entry.sasl_username is None and entry.username == "wakeful"


GOOD = """
[[chat.irc]]
name = "net"
server = "irc.example.org"
nick = "wakeful"
allowed_users = ["alice!~alice@203.0.113.7"]
"""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('nick = "wakeful"', 'nick = "9lives"'), "must be an IRC nick"),
        (('name = "net"', 'name = "net"\nchannels = ["home"]'), "'home' is not a channel name"),
        (('"alice!~alice@203.0.113.7"', '"alice"'), "neither 'account:<name>' nor a"),
        (('"alice!~alice@203.0.113.7"', '"alice!*@*"'), "matches any host"),
        (('"alice!~alice@203.0.113.7"', '"account:"'), "write a services account as"),
        (('name = "net"', 'name = "net"\nsasl_username = "bot"'), "needs sasl_password_file"),
        (('name = "net"', 'name = "net"\nport = 0'), "port"),
        (('name = "net"', 'name = "net"\nsend_interval_s = 0'), "send_interval_s"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_key(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, GOOD.replace(*change))
    message = str(info.value)
    assert "\n" not in message.strip()
    assert expected in message and "chat.irc" in message, message


def test_an_unreadable_password_file_names_the_key_and_the_file(tmp_path: Path) -> None:
    entry = load(tmp_path, GOOD + f'sasl_password_file = "{tmp_path / "missing"}"\n')
    with pytest.raises(ConfigError) as info:
        entry.sasl_password()
    assert str(info.value).startswith("chat.irc 'net'.sasl_password_file: cannot read")


def test_two_entries_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"chat\.irc names must be unique"):
        load(tmp_path, GOOD + GOOD)
