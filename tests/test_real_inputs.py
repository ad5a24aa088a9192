"""Issue 10, finding 8: real messages and payloads (tests/corpus, sources in its READMEs)
reach the model readable, and a GitHub body cannot be replayed or relabelled."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.webhook_fixtures import LiveDaemon, sign_github
from tests.webhook_fixtures import live as live
from wakeful.channels.email.message import parse_email
from wakeful.sources.webhook import github

CORPUS = Path(__file__).parent / "corpus"
EMAIL = CORPUS / "email"
GITHUB = CORPUS / "github"


def _mail(name: str) -> bytes:
    return (EMAIL / name).read_bytes()


def _payload(name: str) -> Any:
    return json.loads((GITHUB / name).read_text(encoding="utf-8"))


def test_a_forward_whose_body_is_a_message_rfc822_part_shows_the_enclosed_text() -> None:
    mail = parse_email(_mail("cpython-msg_46.eml"))
    assert "Testing email forwarding with Groupwise 1.2.2010" in mail.text
    assert "Subject: GroupwiseForwardingTest" in mail.text
    assert 'From: "Dr. Sender" <sender@example.net>' in mail.text


def test_a_message_that_is_only_an_enclosed_message_is_not_empty() -> None:
    mail = parse_email(_mail("cpython-msg_11.eml"))
    assert "Here is the body of the message." in mail.text
    assert "Subject: An enclosed message" in mail.text


def test_gb2312_labelled_text_is_decoded_as_gbk() -> None:
    """Outlook Express labels GBK text gb2312; strict gb2312 showed U+FFFD for 屄 (0x8CC6)."""
    mail = parse_email(_mail("mailparser-mail_test_9.eml"))
    assert "\ufffd" not in mail.text
    assert "我把镜头拉近些，你们看看这个是什么屄，这种场合" in mail.text
    assert mail.subject.startswith("我把镜头拉近些，你们看看这个是什么屄，")  # =?gb2312?B?...?=


def test_utf8_labelled_gb2312_is_read_as_utf8_not_replaced() -> None:
    mail = parse_email(_mail("mailparser-mail_test_12.eml"))
    assert "\ufffd" not in mail.text
    assert mail.text.startswith("你好！我公司可代开各类增值税发票")


def test_an_unquoted_boundary_containing_equals_keeps_the_body() -> None:
    mail = parse_email(_mail("derived-mailparser-mail_test_3-unquoted-boundary.eml"))
    assert "I am sending you the bills of the goods we delivered" in mail.text
    assert [a["name"] for a in mail.attachments] == ["message.txt"]


def test_an_unquoted_rfc2047_attachment_name_is_shown_decoded() -> None:
    mail = parse_email(_mail("derived-mailparser-mail_test_11-unquoted-2047-name.eml"))
    [attachment] = mail.attachments
    assert attachment["name"].startswith("Prokuratura Rejonowa Warszawa-Śródmieście północ")
    assert attachment["name"].endswith("do udziału w postepowaniu.pdf")


def test_workflow_run_with_an_empty_name_is_named_from_the_workflow() -> None:
    payload = _payload("workflow_run.1.json")
    assert payload["workflow_run"]["name"] == ""  # as GitHub published it
    line, fields = github.summarize("workflow_run", payload)
    assert line == "Workflow 'test' run #163 completed: success on master in octo-org/octo-repo"
    assert fields["workflow"] == "test"


@pytest.mark.parametrize(
    "name",
    [p.name for p in sorted(GITHUB.glob("*.json"))],
)
def test_the_event_type_comes_from_the_signed_payload(name: str) -> None:
    """Whatever X-GitHub-Event says, a payload of a preset type is that type; other
    payloads (deployment carries a workflow_run, deployment_status a check_run) are
    never mistaken for one."""
    true_type = name.split(".")[0]
    payload = _payload(name)
    for header in (true_type, "push", "ping", "issues", None):
        kind = github.event_type(header, payload)
        if true_type in ("deployment", "deployment_status"):
            assert kind in (header if header == true_type else None, None)
        else:
            assert kind == true_type


def test_a_replay_under_a_fresh_delivery_id_is_a_duplicate(live: LiveDaemon) -> None:
    body = (GITHUB / "push.0.json").read_bytes()
    first = live.post("gh", body, sign_github(body, "push", "0e1f7f9a-original"))
    replay = live.post("gh", body, sign_github(body, "push", "5c3b2a10-fresh-unsigned"))
    assert first.status_code == replay.status_code == 202
    assert first.json()["duplicate"] is False
    assert replay.json() == {"event_id": first.json()["event_id"], "duplicate": True}
    assert first.json()["event_id"] == "wh:gh:sha256:" + hashlib.sha256(body).hexdigest()
    [stored] = live.new_events()
    assert stored["text"].startswith("Codertocat pushed 0 commits to tag simple-tag in")


def test_a_relabelled_event_header_does_not_change_what_the_event_says(
    live: LiveDaemon,
) -> None:
    body = (GITHUB / "issues.0.json").read_bytes()
    response = live.post("gh", body, sign_github(body, "push"))  # relabelled
    assert response.status_code == 202
    [stored] = live.new_events()
    assert stored["text"].startswith("Issue #1 edited by Codertocat in Codertocat/Hello-World")
    # and a filter on the event type sees the payload's type, not the header's
    prs = (GITHUB / "pull_request.0.json").read_bytes()
    relabelled = live.post("prs", body, sign_github(body, "pull_request"))
    assert relabelled.json()["filtered"] is True
    assert live.post("prs", prs, sign_github(prs, "issues")).json()["duplicate"] is False
