"""Replies follow Reply-To (RFC 5322 §3.6.3), the model sees it, and HTML tables stay readable.

The mail is shaped as a mailing list delivers a client's message: Mailman's list
headers, a Reply-To naming the author(s) rather than the list, and Thunderbird's
multipart/alternative with quoted-printable text and HTML parts.
"""

from __future__ import annotations

from email import message_from_bytes
from email.utils import getaddresses
from pathlib import Path

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.mail_servers import ImapServer, SmtpSink
from tests.test_email_outbox import mail_daemon_config, replier
from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.htmltext import html_to_text
from wakeful.channels.email.inbound import build_event
from wakeful.channels.email.message import parse_email

LIST_MAIL = b"""\
Return-Path: <dev-bounces@lists.example.test>
Received: from mail.example.test (mail.example.test [192.0.2.7])
\tby lists.example.test (Postfix) with ESMTPS id 4Tq3; Tue, 05 Mar 2030 09:12:44 +0000 (UTC)
Message-ID: <6f1c2a0e-93d4-4b7e-a1c2-8e0f9d3b7a51@example.test>
Date: Tue, 5 Mar 2030 10:12:40 +0100
MIME-Version: 1.0
User-Agent: Mozilla Thunderbird
Content-Language: en-US
To: dev@lists.example.test
From: Carol Meyer via dev <dev@lists.example.test>
Reply-To: Carol Meyer <carol@example.test>,
 "Dave, the release manager" <dave@example.test>
Subject: [dev] Release checklist for 2.4
List-Id: Developers <dev.lists.example.test>
List-Post: <mailto:dev@lists.example.test>
List-Unsubscribe: <https://lists.example.test/mailman/options/dev>,
 <mailto:dev-request@lists.example.test?subject=unsubscribe>
Precedence: list
Errors-To: dev-bounces@lists.example.test
Sender: "dev" <dev-bounces@lists.example.test>
Content-Type: multipart/alternative;
 boundary="------------nA8h0mC2Xu5Yc1bq3ZrVwE7d"

This is a multi-part message in MIME format.
--------------nA8h0mC2Xu5Yc1bq3ZrVwE7d
Content-Type: text/plain; charset=UTF-8; format=flowed
Content-Transfer-Encoding: quoted-printable

Hi all,

here is the checklist for 2.4 =E2=80=93 please answer me directly, not the=20
list.

Carol
_______________________________________________
dev mailing list
dev@lists.example.test

--------------nA8h0mC2Xu5Yc1bq3ZrVwE7d
Content-Type: text/html; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

<html>
  <head>
    <meta http-equiv=3D"content-type" content=3D"text/html; charset=3DUTF-8">
  </head>
  <body>
    <p>Hi all,</p>
    <table border=3D"1" cellpadding=3D"2" cellspacing=3D"2" width=3D"100%">
      <tbody>
        <tr>
          <td>Step<br>
          </td>
          <td>Owner<br>
          </td>
        </tr>
        <tr>
          <td>Tag the release<br>
          </td>
          <td>Dave<br>
          </td>
        </tr>
      </tbody>
    </table>
  </body>
</html>

--------------nA8h0mC2Xu5Yc1bq3ZrVwE7d--
""".replace(b"\n", b"\r\n")


def _account() -> EmailAccountConfig:
    return EmailAccountConfig.model_validate(
        {"name": "work", "imap_host": "h", "username": "me@example.test"}
    )


def test_list_mail_reply_to_is_parsed_and_shown_to_the_model() -> None:
    mail = parse_email(LIST_MAIL)
    expected = [
        "Carol Meyer <carol@example.test>",
        '"Dave, the release manager" <dave@example.test>',
    ]
    assert mail.reply_to == expected
    assert mail.reply_recipients == expected  # not the list in From
    assert "2.4 \u2013 please answer me directly" in mail.text  # the QP plain part, decoded
    event = build_event(_account(), "INBOX", 1, 7, mail)
    assert f"Reply-To: {', '.join(expected)}" in event.content.text
    assert event.content.data["reply_to"] == expected


def test_without_reply_to_a_reply_goes_to_the_sender() -> None:
    mail = parse_email(LIST_MAIL.replace(b"Reply-To:", b"X-Old-Reply-To:"))
    assert mail.reply_to == []
    assert mail.reply_recipients == ["Carol Meyer via dev <dev@lists.example.test>"]
    assert "Reply-To" not in build_event(_account(), "INBOX", 1, 7, mail).content.text


def test_html_table_cells_are_separated_and_rows_are_lines() -> None:
    (part,) = [p for p in message_from_bytes(LIST_MAIL).walk() if p.get_content_subtype() == "html"]
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    html = payload.decode()
    assert html_to_text(html) == "Hi all,\n\nStep | Owner\nTag the release | Dave"
    nested = (
        "<table><tr><td>a</td><td><table><tr><td>b</td><td>c</td></tr></table></td></tr></table>"
    )
    assert html_to_text(nested).splitlines() == ["a |", "b | c"]


def test_a_reply_to_a_list_mail_goes_to_its_reply_to_addresses(
    tmp_path: Path, imap_server: ImapServer, smtp_sink: SmtpSink, model_server: FakeModelServer
) -> None:
    """The whole path: the daemon sees the list mail, the model drafts a reply, SMTP gets it."""
    imap_server.append(LIST_MAIL)
    model_server.responder = replier
    config, port = mail_daemon_config(tmp_path / "data", model_server, imap_server, smtp_sink)
    with DaemonProcess(config, port):
        (sent,) = smtp_sink.wait_for(1, timeout_s=30)
    assert sorted(sent.rcpt_tos) == ["carol@example.test", "dave@example.test"]
    to = getaddresses([str(message_from_bytes(sent.data)["To"])])
    assert sorted(a for _, a in to) == ["carol@example.test", "dave@example.test"]
