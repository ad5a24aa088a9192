"""IRC lines: parsing, and the promise that a reply fits the 512-byte line as relayed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wakeful.channels.irc.identity import Identities
from wakeful.channels.irc.protocol import (
    LINE_BYTES,
    format_line,
    parse_line,
    privmsg_lines,
    split_bytes,
    text_budget,
)

NICKS = st.from_regex(r"[a-z][a-z0-9_]{0,29}", fullmatch=True)
TARGETS = st.one_of(NICKS, st.from_regex(r"#[a-z0-9_-]{1,49}", fullmatch=True))
TEXTS = st.text(st.characters(blacklist_categories=["Cs"]), max_size=3000)


def test_a_tagged_line_with_a_prefix_and_a_trailing_parameter() -> None:
    line = parse_line(
        "@account=alice;msgid=a\\sb\\:c :alice!~a@host PRIVMSG #home :wakeful: hi there\r\n"
    )
    assert line is not None
    assert line.tags == {"account": "alice", "msgid": "a b;c"}
    assert (line.prefix, line.nick, line.command) == ("alice!~a@host", "alice", "PRIVMSG")
    assert line.params == ["#home", "wakeful: hi there"]


def test_numerics_pings_and_blank_lines() -> None:
    assert parse_line("PING :irc.example") == parse_line("PING irc.example")
    welcome = parse_line(":srv 001 wakeful :Welcome")
    assert welcome is not None and welcome.params == ["wakeful", "Welcome"]
    assert parse_line("") is None and parse_line(":prefix-only") is None


def test_only_the_last_parameter_may_hold_spaces() -> None:
    assert format_line("PRIVMSG", "#home", "two words") == "PRIVMSG #home :two words"
    with pytest.raises(ValueError):
        format_line("PRIVMSG", "#home x", "text")
    with pytest.raises(ValueError):
        format_line("PRIVMSG", "#home", "line\r\nQUIT :injected")


@given(nick=NICKS, target=TARGETS, text=TEXTS)
def test_every_line_fits_as_the_server_relays_it_and_nothing_is_lost(
    nick: str, target: str, text: str
) -> None:
    """Each PRIVMSG, with the longest prefix a server may put before it, is within 512
    bytes; no line holds CR, LF or NUL; each non-blank line of the reply is its lines
    put together (the server keeps their leading space, drops a trailing one)."""
    budget = text_budget(nick, target)
    sent = privmsg_lines(text, budget)
    host = "h" * 63
    for piece in sent:
        relayed = f":{nick}!{'u' * 18}@{host} PRIVMSG {target} :{piece}\r\n"
        assert len(relayed.encode()) <= LINE_BYTES
        assert not set(piece) & {"\r", "\n", "\0", "\x01"}
        assert piece.strip()
    # What may be sent: CR, NUL and C0 controls but tab and IRC's formatting codes go.
    cleaned = "".join(ch for ch in text if ch >= " " or ch in "\t\n\x02\x1d\x1f\x0f\x03")
    expected = "".join(line.rstrip() for line in cleaned.split("\n") if line.strip())
    assert "".join(sent) == expected


@given(line=TEXTS.filter(lambda t: "\n" not in t), budget=st.integers(4, 500))
def test_split_bytes_cuts_whole_characters_within_the_budget(line: str, budget: int) -> None:
    pieces = split_bytes(line, budget)
    assert "".join(pieces) == line
    assert all(0 < len(piece.encode()) <= budget for piece in pieces)


def test_a_cut_falls_before_a_space_and_the_space_starts_the_next_line() -> None:
    pieces = split_bytes("aaaa bbbb cccc", 10)
    assert pieces == ["aaaa bbbb", " cccc"]


def test_a_channel_reply_starts_with_the_writers_nick() -> None:
    assert privmsg_lines("one\n\ntwo", 400, "alice: ") == ["alice: one", "two"]


def test_a_target_too_long_for_any_text_is_refused() -> None:
    with pytest.raises(ValueError):
        text_budget("n" * 200, "#" + "c" * 200)


@pytest.mark.parametrize(
    ("prefix", "account", "expected"),
    [
        ("owner!~owner@127.0.0.1", None, "owner!*@127.0.0.1"),  # the mask it matched
        ("OWNER!~x@127.0.0.1", None, "owner!*@127.0.0.1"),  # IRC is case-insensitive
        ("owner!~owner@203.0.113.9", None, "owner!~owner@203.0.113.9"),  # another host
        ("anyone!~a@h", "alice", "account:alice"),  # the services account vouched for
        ("anyone!~a@h", "bob", "account:bob"),  # logged in, not an owner: stable id
        ("anyone!~a@h", "*", "anyone!~a@h"),  # "*" is logged out
        ("own[er]!~o@h", None, "own[er]!~o@h"),  # [ ] are nick characters, not a class
    ],
)
def test_who_wrote(prefix: str, account: str | None, expected: str) -> None:
    identities = Identities(["owner!*@127.0.0.1", "account:alice", "own[er]!~o@h"])
    assert identities.user_id(prefix, account) == expected
