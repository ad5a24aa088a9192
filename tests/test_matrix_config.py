"""``[[chat.matrix]]``: what loads, and one clear line for what cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from wakeful.app.config import ConfigError, load_settings

GOOD = """
[[chat.matrix]]
name = "home"
homeserver = "https://matrix.example.org/"
user_id = "@wakeful:example.org"
access_token_file = "/etc/wakeful/matrix-token"
allowed_users = ["@me:example.org"]
"""


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "wakeful.toml"
    path.write_text(text)
    return load_settings(path)


def test_an_account_loads_with_its_defaults(tmp_path: Path) -> None:
    settings = load(tmp_path, GOOD)
    [account] = settings.chat.matrix  # type: ignore[attr-defined]
    assert account.homeserver == "https://matrix.example.org"
    assert account.session == "main" and account.device == "WAKEFUL_HOME"
    assert account.sync_timeout_s == 30


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('user_id = "@wakeful:example.org"', 'user_id = "wakeful"'), "full Matrix user id"),
        (('"@me:example.org"', '"me"'), "'me' is not a full Matrix user id"),
        (('"https://matrix.example.org/"', '"matrix.example.org"'), "base URL"),
        (
            ('access_token_file = "/etc/wakeful/matrix-token"', ""),
            "exactly one of access_token_file or password_file",
        ),
        (
            ("allowed_users", 'password_file = "/p"\nallowed_users'),
            "exactly one of access_token_file or password_file",
        ),
        (('name = "home"', 'name = "Home Server"'), "chat.matrix"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_key(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, GOOD.replace(*change))
    message = str(info.value)
    assert expected in message and "chat.matrix" in message, message


def test_two_accounts_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"chat\.matrix names must be unique"):
        load(tmp_path, GOOD + GOOD)
