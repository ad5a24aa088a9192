"""Authentication-Results (RFC 8601): which headers count and when a From domain is vouched for."""

from __future__ import annotations

import pytest

from tests.mail_servers import make_message
from wakeful.channels.email.authentication import parse_authentication_results, verdict
from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.inbound import build_event
from wakeful.channels.email.message import parse_email

SERVER = "mx.example.com"


def check(*headers: str, from_domain: str = "example.com", authserv_id: str = SERVER) -> str:
    """The verdict's description, prefixed with "TRUSTED " when it authenticates."""
    result = verdict(list(headers), authserv_id, from_domain)
    return ("TRUSTED " if result.authenticated else "") + result.description


def test_dkim_and_dmarc_passes_authenticate() -> None:
    assert check(f"{SERVER}; dkim=pass header.d=example.com header.s=sel") == (
        "TRUSTED dkim=pass header.d=example.com header.s=sel (mx.example.com)"
    )
    assert check(f"{SERVER}; dmarc=pass header.from=example.com") == (
        "TRUSTED dmarc=pass header.from=example.com (mx.example.com)"
    )


def test_failures_and_absence_do_not() -> None:
    assert check(f"{SERVER}; dkim=fail header.d=example.com") == (
        "not authenticated (nothing aligned with example.com): "
        "dkim=fail header.d=example.com (mx.example.com)"
    )
    assert check(f"{SERVER}; dmarc=fail header.from=example.com").startswith("not authenticated")
    assert check(f"{SERVER}; none") == "none"
    assert check() == "none"
    assert check(f"{SERVER}; dkim=pass header.d=example.com", authserv_id="") == "none"


def test_a_pass_for_another_domain_does_not_vouch_for_the_from_domain() -> None:
    assert check(f"{SERVER}; dmarc=pass header.from=attacker.test").startswith("not auth")
    assert check(f"{SERVER}; dkim=pass header.d=attacker.test").startswith("not auth")
    # a look-alike that merely ends in the same letters is not a subdomain
    assert check(f"{SERVER}; dkim=pass header.d=ample.com").startswith("not auth")
    # DMARC's header.from must be the From domain itself, not a parent of it
    result = check(f"{SERVER}; dmarc=pass header.from=example.com", from_domain="a.example.com")
    assert result.startswith("not auth")
    assert check(f"{SERVER}; dkim=pass header.d=example.com", from_domain="").startswith(
        "not authenticated (no From domain)"
    )


def test_spf_pass_alone_is_not_enough() -> None:
    header = f"{SERVER}; spf=pass smtp.mailfrom=boss@example.com"
    assert check(header) == (
        "not authenticated (nothing aligned with example.com): "
        "spf=pass smtp.mailfrom=boss@example.com (mx.example.com)"
    )


def test_headers_from_another_authserv_id_are_ignored() -> None:
    """A header naming some other server - which the sender could have written - counts
    for nothing, even above the real one."""
    forged = "mx.attacker.test; dkim=pass header.d=example.com; dmarc=pass header.from=example.com"
    assert check(forged) == "none"
    assert check(forged, f"{SERVER}; dkim=fail header.d=example.com").startswith("not auth")
    assert check(forged, f"{SERVER}; dkim=pass header.d=example.com").startswith("TRUSTED")


def test_a_forged_header_with_our_authserv_id_below_the_servers_own_does_not_count() -> None:
    """The receiving server prepends its header, so only the topmost one with its id is
    its own; one further down was in the mail already (a sender wrote it)."""
    real = f"{SERVER}; dkim=none; dmarc=fail header.from=example.com"
    forged = f"{SERVER}; dkim=pass header.d=example.com; dmarc=pass header.from=example.com"
    assert check(real, forged).startswith("not authenticated")
    assert check(forged, real).startswith("TRUSTED")  # (as the server would have written it)


def test_several_results_in_one_header() -> None:
    """A failed signature beside an aligned passing one; an unaligned pass beside a fail."""
    header = (
        f"{SERVER}; dkim=fail header.d=example.com header.s=old; "
        "dkim=pass header.d=example.com header.s=new; spf=softfail smtp.mailfrom=example.com"
    )
    assert check(header) == "TRUSTED dkim=pass header.d=example.com header.s=new (mx.example.com)"
    unaligned = f"{SERVER}; dkim=pass header.d=esp.test; dmarc=fail header.from=example.com"
    assert check(unaligned) == (
        "not authenticated (nothing aligned with example.com): dkim=pass header.d=esp.test; "
        "dmarc=fail header.from=example.com (mx.example.com)"
    )


def test_a_long_list_of_failures_is_summarised() -> None:
    """One result per DKIM signature: a sender can add many; the verdict stays one line."""
    header = f"{SERVER}; " + "; ".join(f"dkim=fail header.d=d{i}.test" for i in range(30))
    description = check(header)
    assert description.endswith("dkim=fail header.d=d3.test; and 26 more (mx.example.com)")


def test_comments_quoting_versions_and_case() -> None:
    """Comments (nested, with ';' and '=' inside), quoted values, a version, any case."""
    header = (
        "MX.Example.COM 1; (a comment; dkim=pass header.d=example.com) spf=pass "
        '(sender (nested) IP is 192.0.2.1) smtp.mailfrom="boss;x"@example.com; '
        'DKIM/1 = Pass (2048-bit key; unprotected) reason="signature ok; fine" '
        'header.d="Example.COM" header.i=@example.com header.b="abc/+=="; '
        "dmarc=pass (p=NONE sp=QUARANTINE dis=NONE) header.from=example.com"
    )
    parsed = parse_authentication_results(header)
    assert parsed is not None and parsed.authserv_id == "mx.example.com"
    assert [(r.method, r.result) for r in parsed.results] == [
        ("spf", "pass"),
        ("dkim", "pass"),
        ("dmarc", "pass"),
    ]
    assert parsed.results[0].properties == {"smtp.mailfrom": "boss;x@example.com"}
    assert parsed.results[1].properties["header.d"] == "Example.COM"
    assert parsed.results[1].properties["header.b"] == "abc/+=="
    assert check(header) == (
        "TRUSTED dkim=pass header.d=Example.COM header.i=@example.com (mx.example.com)"
    )
    quoted_id = '"mx.example.com"; dmarc=pass header.from=example.com'
    assert check(quoted_id).startswith("TRUSTED")


@pytest.mark.parametrize(
    ("signer", "from_domain", "aligned"),
    [
        ("example.com", "example.com", True),
        ("example.com", "mail.example.com", True),  # From is a subdomain of the signer
        ("example.com", "a.b.example.com", True),
        ("mail.example.com", "example.com", False),  # the signer is a subdomain: no
        ("com", "example.com", False),  # a single label covers no one in particular
        ("example.com.", "EXAMPLE.com", True),  # trailing dot and case do not matter
    ],
)
def test_dkim_alignment_is_the_signer_or_a_parent_of_the_from_domain(
    signer: str, from_domain: str, aligned: bool
) -> None:
    header = f"{SERVER}; dkim=pass header.d={signer}"
    assert check(header, from_domain=from_domain).startswith("TRUSTED") is aligned


def test_header_i_is_used_when_header_d_is_absent() -> None:
    """Gmail writes the signer as header.i=@domain."""
    assert check(f"{SERVER}; dkim=pass header.i=@example.com header.s=20230601").startswith(
        "TRUSTED"
    )
    assert check(f"{SERVER}; dkim=pass header.i=@attacker.test").startswith("not auth")


def test_garbage_is_skipped_not_fatal() -> None:
    for value in ["", ";;;", "(unclosed", f'{SERVER}; dkim="unclosed', f"{SERVER}; =pass"]:
        assert not verdict([value], SERVER, "example.com").authenticated, value
    assert parse_authentication_results("") is None
    # a malformed result beside a good one: the good one still counts
    assert check(f"{SERVER}; =pass; dkim; dmarc=pass header.from=example.com").startswith("TRUSTED")


def test_the_parsed_mail_carries_its_headers_and_from_domain() -> None:
    """Headers top to bottom, decoded; the From domain only for exactly one From address."""
    body = make_message("Boss <Boss@Example.COM>", "hi", "x")
    raw = (
        f"Authentication-Results: {SERVER};\r\n\tdkim=pass header.d=example.com\r\n"
        "Authentication-Results: other.test; none\r\n"
    ).encode() + body
    mail = parse_email(raw)
    assert mail.from_domain == "example.com"
    assert mail.authentication_results == [
        f"{SERVER};\tdkim=pass header.d=example.com",  # unfolded
        "other.test; none",
    ]
    # an encoded-word is not decoded: it could hide a forged authserv-id from a server
    # that strips headers naming itself
    encoded = parse_email(
        b"Authentication-Results: =?utf-8?q?mx.example.com=3B_dkim=3Dpass_header.d=3D"
        b"example.com?=\r\nFrom: a@example.com\r\n\r\nx"
    )
    assert encoded.authentication_results[0].startswith("=?utf-8?q?mx.example.com=3B")
    assert not verdict(encoded.authentication_results, SERVER, "example.com").authenticated
    two = parse_email(b"From: a@example.com, b@attacker.test\r\n\r\nx")
    assert two.from_domain == "" and two.authentication_results == []
    repeated = parse_email(b"From: a@example.com\r\nFrom: b@attacker.test\r\n\r\nx")
    assert repeated.from_domain == ""


def owner_account(**extra: object) -> EmailAccountConfig:
    return EmailAccountConfig.model_validate(
        {
            "name": "work",
            "imap_host": "h",
            "username": "me@example.com",
            "owner_senders": ["boss@example.com"],
            "authserv_id": SERVER,
            **extra,
        }
    )


@pytest.mark.parametrize(
    "from_header",
    [
        b'"boss@example.com" <x@evil.test>',  # a display name that reads like the owner
        b"=?utf-8?b?Ym9zc0BleGFtcGxlLmNvbQ==?= <x@evil.test>",  # the same, encoded
    ],
)
def test_a_display_name_that_reads_like_the_owner_is_not_the_owner(from_header: bytes) -> None:
    """The attacker signs as its own domain (a real pass, aligned with its own address);
    the owner's address in the display name makes it neither the sender nor trusted."""
    raw = (
        f"Authentication-Results: {SERVER}; dkim=pass header.d=evil.test\r\n".encode()
        + b"From: "
        + from_header
        + b"\r\nSubject: wire\r\n\r\nx"
    )
    mail = parse_email(raw)
    event = build_event(owner_account(), "INBOX", 1, 1, mail)
    assert mail.sender == "x@evil.test" and mail.from_domain == "evil.test"
    assert mail.sender_display == '"boss@example.com" <x@evil.test>'
    assert event.content.data["authentication"].startswith("dkim=pass header.d=evil.test")
    assert event.source.principal == "x@evil.test" and not event.source.trusted


def test_the_owner_rule_needs_the_listed_address_and_the_servers_pass() -> None:
    """Listed and authenticated: trusted. Authenticated but not listed, listed with only
    an SPF pass, or with a pass from another server: not."""

    def trusted(sender: str, header: str) -> bool:
        raw = make_message(sender, "s", "b", authentication_results=(header,))
        return build_event(owner_account(), "INBOX", 1, 1, parse_email(raw)).source.trusted

    assert trusted("Boss <Boss@Example.com>", f"{SERVER}; dmarc=pass header.from=example.com")
    assert not trusted("other@example.com", f"{SERVER}; dmarc=pass header.from=example.com")
    assert not trusted("boss@example.com", f"{SERVER}; spf=pass smtp.mailfrom=example.com")
    assert not trusted("boss@example.com", "other.test; dmarc=pass header.from=example.com")


FORGED_PASS = f"Authentication-Results: {SERVER}; dmarc=pass header.from=example.com\r\n"
# What the receiving server writes on accepting the mail, above everything the sender wrote.
ACCEPTED = (
    "Received: from mail.evil.test (mail.evil.test [192.0.2.7])\r\n"
    "\tby mx.example.com (Postfix) with ESMTPS id 4Xyz; Thu, 3 Dec 2026 13:00:00 +0000\r\n"
)
LMTP = (
    "Received: from mx.example.com\r\n"
    "\tby imap.example.com with LMTP id 7abc; Thu, 3 Dec 2026 13:00:01 +0000\r\n"
)


def owner_mail(*headers: str) -> bytes:
    body = make_message("boss@example.com", "wire the money", "now")
    return "".join(headers).encode() + body


def test_a_senders_own_pass_is_not_the_servers_when_the_server_stamped_none() -> None:
    """The sender writes a pass naming our server; our server (its filter down, say)
    stamps nothing and only prepends its Received line: the header is below that line,
    so it is the sender's, and the mail is a stranger's."""
    mail = parse_email(owner_mail(ACCEPTED, FORGED_PASS))
    assert mail.received_above == [1]
    event = build_event(owner_account(), "INBOX", 1, 1, mail)
    assert not event.source.trusted, event.content.data
    said = event.content.data["authentication"]
    assert said.startswith(f"not authenticated: the topmost header naming {SERVER} has 1 ")
    assert "authserv_received_above = 0" in said
    # The same pass written by the server itself, above its Received line: trusted.
    real = parse_email(owner_mail(FORGED_PASS, ACCEPTED))
    assert build_event(owner_account(), "INBOX", 1, 1, real).source.trusted


def test_servers_that_stamp_below_their_received_lines_set_the_count() -> None:
    """A delivery hop above the server's header (Dovecot LMTP) needs
    authserv_received_above = 1; a forgery under the accepting Received line still has
    one line more than that."""
    genuine = parse_email(owner_mail(LMTP, FORGED_PASS, ACCEPTED))
    forged = parse_email(owner_mail(LMTP, ACCEPTED, FORGED_PASS))
    one = owner_account(authserv_received_above=1)
    assert not build_event(owner_account(), "INBOX", 1, 1, genuine).source.trusted  # default 0
    assert build_event(one, "INBOX", 1, 1, genuine).source.trusted
    assert not build_event(one, "INBOX", 1, 1, forged).source.trusted


def test_owner_trust_is_stated_for_status() -> None:
    """Without authserv_id nobody is the owner, and status says so (the log too, once)."""
    unset = owner_account(authserv_id="")
    assert unset.owner_trust().startswith("off: authserv_id is empty")
    assert unset.owner_trust_warning() is not None
    raw = owner_mail(FORGED_PASS)
    assert not build_event(unset, "INBOX", 1, 1, parse_email(raw)).source.trusted
    assert owner_account().owner_trust().startswith(f"on: owner_senders when {SERVER} vouches")
