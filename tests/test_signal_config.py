"""``[[chat.signal]]``: what loads (the guide's examples as written), one clear line for what
cannot, and the splitting promise at Signal's limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.daemon_process import free_port, run_to_exit, write_config
from tests.test_documented_commands import ROOT
from wakeful.app.config import ConfigError, Settings, load_settings
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.signal.client import MAX_CHARS, SignalClient

GOOD = """
[[chat.signal]]
name = "phone"
allowed_users = ["+15552223333"]
"""


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "wakeful.toml"
    path.write_text(text)
    return load_settings(path)


def guide_examples() -> list[str]:
    text = (ROOT / "docs" / "signal.md").read_text()
    return [block.split("```", 1)[0] for block in text.split("```toml\n")[1:]]


@pytest.mark.parametrize("example", guide_examples())
def test_the_guides_examples_load_as_written(tmp_path: Path, example: str) -> None:
    [account] = load(tmp_path, example).chat.signal
    assert account.url == "http://127.0.0.1:8080"
    assert account.allowed_users[0] == "+15552223333"


def test_the_guide_has_both_examples() -> None:
    assert len(guide_examples()) == 2


def test_an_account_loads_with_its_defaults(tmp_path: Path) -> None:
    [account] = load(tmp_path, GOOD).chat.signal
    assert account.url == "http://127.0.0.1:8080"
    assert account.account is None and account.auth_token_file is None
    assert account.session == "main" and account.allowed_groups == []
    assert account.read_receipts and account.typing_every_s == 10.0
    assert (account.retry_min_s, account.retry_max_s) == (1.0, 60.0)


@pytest.mark.parametrize(
    "url", ["tcp://127.0.0.1:7583", "tcp://[::1]:7583", "unix:///run/signal-cli/socket"]
)
def test_the_socket_modes_load(tmp_path: Path, url: str) -> None:
    [account] = load(
        tmp_path, GOOD.replace("allowed_users", f'url = "{url}"\nallowed_users')
    ).chat.signal
    assert account.url == url


def test_an_aci_is_kept_in_lower_case(tmp_path: Path) -> None:
    text = GOOD.replace('"+15552223333"', '"0D2E5F4C-7B1A-4C3E-9F6D-2A8B1C0E3D4F"')
    [account] = load(tmp_path, text).chat.signal
    assert account.allowed_users == ["0d2e5f4c-7b1a-4c3e-9f6d-2a8b1c0e3d4f"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('"+15552223333"', '"015552223333"'), "neither a phone number with its country code"),
        (
            ("allowed_users", 'url = "127.0.0.1:8080"\nallowed_users'),
            "not where a signal-cli daemon listens",
        ),
        (("allowed_users", 'account = "me"\nallowed_users'), "country code, e.g. +15550001111"),
        (("allowed_users", 'allowed_groups = ["family"]\nallowed_users'), "listGroups"),
        (('name = "phone"', 'name = "My Phone"'), "chat.signal"),
        (
            (
                "allowed_users",
                'url = "tcp://127.0.0.1:7583"\nauth_token_file = "/t"\nallowed_users',
            ),
            "take no token",
        ),
        (("allowed_users", "sms = true\nallowed_users"), "sms"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_key(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, GOOD.replace(*change))
    message = str(info.value)
    assert "\n" not in message.strip(), message
    assert expected in message and "chat.signal" in message, message


def test_two_accounts_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, GOOD + GOOD)
    assert "chat.signal names must be unique" in str(info.value)


def test_an_unreadable_token_file_stops_the_start_with_one_line(tmp_path: Path) -> None:
    """`wakeful run` with a token file it cannot read: exit 2, one line naming the key."""
    missing = tmp_path / "no-such-token"
    config = write_config(tmp_path / "data", None, free_port())
    with config.open("a") as out:
        out.write(GOOD.replace("allowed_users", f'auth_token_file = "{missing}"\nallowed_users'))
    result = run_to_exit(config)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "chat.signal[phone].auth_token_file: cannot read" in result.stderr
    assert str(missing) in result.stderr


def test_sends_are_not_resend_safe() -> None:
    """signal-cli's send has no idempotency key: the outbox must never repeat one."""
    assert SignalClient.resend_safe is False


@given(st.text(alphabet=st.sampled_from("ab \n`😀x"), max_size=7000))
def test_every_piece_fits_signals_limit_and_together_they_are_the_reply(text: str) -> None:
    """Splitting at Signal's limit: each piece within it; joined (less the whitespace cut at
    the seams and the fences closed and reopened there) they are the reply."""
    pieces = split_message(text, MAX_CHARS)
    assert all(len(piece) <= MAX_CHARS for piece in pieces)
    if "```" not in text:
        squeeze = "".join(text.split())
        assert "".join("".join(pieces).split()) == squeeze
