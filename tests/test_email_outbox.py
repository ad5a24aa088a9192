"""E-mail through the shared outbox: a crash between "sent" and "recorded" never sends
the message twice (the Sent folder settles it, else it stays unknown); a transient
refusal is retried by the deliverer, a permanent one fails and the agent is told."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.mail_servers import ImapServer, ReceivedMail, SmtpSink, make_message


def email_config(imap: ImapServer, smtp: SmtpSink) -> str:
    account = imap.account(initial_sync="all", **smtp.account())
    lines = ["[[email.accounts]]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in account.items()]
    return "\n".join(lines) + "\n"


def mail_daemon_config(
    data_dir: Path, model_server: FakeModelServer, imap: ImapServer, smtp: SmtpSink
) -> tuple[Path, int]:
    """A `wakeful run` config with the fake model and one mail account, and its port."""
    port = free_port()
    config = write_config(data_dir, model_server.base_url, port)
    # The sender is a stranger, so the session is tainted: replying to them is allowed
    # by the allowlist, as an owner who answers that domain's mail would configure it.
    base = config.read_text().replace(
        'sandbox = "none"\n', 'sandbox = "none"\nemail_allow = ["*@example.test"]\n'
    )
    config.write_text(base + email_config(imap, smtp))
    return config, port


def replier(body: dict[str, Any]) -> Reply:
    """Drafts a reply to the email, sends it, and sends again when the user says so."""
    messages = body["messages"]
    text = "\n".join(m.get("content") or "" for m in messages if m["role"] in ("user", "tool"))
    sends = sum(
        1
        for m in messages
        for call in m.get("tool_calls") or []
        if call["function"]["name"] == "send_email"
    )
    draft = re.search(r"Draft (draft-\w+)", text)
    if draft is None:
        email_id = re.search(r"Email id: (\S+)", text)
        assert email_id is not None
        args = {"reply_to_email_id": email_id.group(1), "body": "Yes, Tuesday works."}
        return Reply(tool_calls=[ToolCallSpec("draft_email", args)])
    asked = sum(
        1 for m in messages if m["role"] == "user" and "send it again" in (m.get("content") or "")
    )
    if sends < 1 + asked:
        return Reply(tool_calls=[ToolCallSpec("send_email", {"draft_id": draft.group(1)})])
    return Reply(text="done")


def outbox_states(data_dir: Path) -> list[str]:
    """The shared outbox's e-mails (the daemon's SQLite file), oldest first."""
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        rows = conn.execute("SELECT state FROM outbox WHERE channel = 'email:work' ORDER BY id")
        return [row[0] for row in rows]


def outbox_listing(daemon: DaemonProcess) -> list[dict[str, Any]]:
    """The session's outgoing messages as the HTTP API lists them (chat replies too)."""
    with daemon.client() as client:
        response = client.get("/api/sessions/main/outbox")
        response.raise_for_status()
        messages: list[dict[str, Any]] = response.json()["messages"]
        return messages


def wait_for_email_state(
    daemon: DaemonProcess, state: str, timeout_s: float = 30.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        emails = [m for m in outbox_listing(daemon) if m["channel"] == "email:work"]
        if emails and emails[-1]["state"] == state:
            return emails[-1]
        time.sleep(0.1)  # the outbox is read over HTTP; there is no event to await here
    raise TimeoutError(f"no e-mail in the outbox reached {state!r}")


def wait_for_tool_text(server: FakeModelServer, needle: str, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for request in list(server.requests):
            for message in request.body["messages"]:
                content = message.get("content") or ""
                if message["role"] == "tool" and needle in content:
                    return str(content)
        time.sleep(0.05)  # the fake server records requests; there is no event per content
    raise TimeoutError(f"no tool result containing {needle!r}")


def test_crash_between_send_and_record_does_not_resend(
    tmp_path: Path, imap_server: ImapServer, smtp_sink: SmtpSink, model_server: FakeModelServer
) -> None:
    """SIGKILL while the SMTP server accepts the mail: after restart it is "unknown", not resent."""
    imap_server.append(make_message("pat@example.test", "Tuesday?", "Can we meet on Tuesday?"))
    model_server.responder = replier
    data_dir = tmp_path / "data"
    config, port = mail_daemon_config(data_dir, model_server, imap_server, smtp_sink)
    first = DaemonProcess(config, port)

    def crash(_mail: ReceivedMail) -> None:
        first.kill()  # the daemon dies before it hears the server's 250

    smtp_sink.on_receive = crash
    with first:
        smtp_sink.wait_for(1, timeout_s=30)
        assert first.proc is not None
        first.proc.wait(timeout=10)
    assert outbox_states(data_dir) == ["sending"]
    smtp_sink.on_receive = None
    with DaemonProcess(config, port) as second:
        # Looked for in Sent at the start, not found: unknown, never sent again.
        assert wait_for_email_state(second, "unknown", timeout_s=1)["attempts"] == 1
        second.send("send it again")
        result = wait_for_tool_text(model_server, "outcome of sending")
    assert "UNKNOWN" in result and "NOT sent again" in result
    assert len(smtp_sink.messages) == 1
    assert outbox_states(data_dir) == ["unknown"]


def test_sent_copy_found_on_server_settles_as_sent(
    tmp_path: Path, imap_server: ImapServer, smtp_sink: SmtpSink, model_server: FakeModelServer
) -> None:
    """When the server filed the message in Sent before the crash, the outbox records it sent."""
    imap_server.append(make_message("pat@example.test", "Tuesday?", "Can we meet on Tuesday?"))
    model_server.responder = replier
    data_dir = tmp_path / "data"
    config, port = mail_daemon_config(data_dir, model_server, imap_server, smtp_sink)
    first = DaemonProcess(config, port)

    def file_then_crash(mail: ReceivedMail) -> None:
        with imap_server.client() as client:  # like servers that keep sent mail themselves
            client.create_folder("Sent")
            client.append("Sent", mail.data)
        first.kill()

    smtp_sink.on_receive = file_then_crash
    with first:
        smtp_sink.wait_for(1, timeout_s=30)
        assert first.proc is not None
        first.proc.wait(timeout=10)
    assert outbox_states(data_dir) == ["sending"]
    smtp_sink.on_receive = None
    with DaemonProcess(config, port) as second:
        # Settled at the start, before any session runs: the Sent folder has it.
        assert wait_for_email_state(second, "sent", timeout_s=1)["attempts"] == 1
        second.send("send it again")
        result = wait_for_tool_text(model_server, "already sent")
    assert "not sent again" in result and "confirmed afterwards" in result
    assert len(smtp_sink.messages) == 1
    assert outbox_states(data_dir) == ["sent"]


def test_a_transient_refusal_is_retried_by_the_outbox_and_sent_once(
    tmp_path: Path, imap_server: ImapServer, smtp_sink: SmtpSink, model_server: FakeModelServer
) -> None:
    """A 4xx reply (the server busy): the agent is told "not sent", the deliverer sends it
    again by itself, once; the outbox's listing shows the e-mail with both attempts."""
    imap_server.append(make_message("pat@example.test", "Tuesday?", "Can we meet on Tuesday?"))
    model_server.responder = replier
    smtp_sink.refusals = ["451 4.3.0 Mailbox busy, try again later"]
    config, port = mail_daemon_config(tmp_path / "data", model_server, imap_server, smtp_sink)
    with DaemonProcess(config, port) as daemon:
        result = wait_for_tool_text(model_server, "not sent")
        assert "451" in result and "retried by itself" in result
        email = wait_for_email_state(daemon, "sent")
        assert email["attempts"] == 2 and email["address"] == "pat@example.test"
        assert "\r\nMessage-ID: <" in email["text"] and email["text"].isascii()
    assert smtp_sink.refused == 1
    assert len(smtp_sink.messages) == 1
    assert imap_server.uids("Sent") != []  # the copy filed after the retry


def test_a_permanent_refusal_fails_and_the_agent_is_told(
    tmp_path: Path, imap_server: ImapServer, smtp_sink: SmtpSink, model_server: FakeModelServer
) -> None:
    """A 5xx reply: the e-mail is failed in the outbox, never retried, and the tool says so."""
    imap_server.append(make_message("pat@example.test", "Tuesday?", "Can we meet on Tuesday?"))
    model_server.responder = replier
    smtp_sink.refusals = ["550 5.1.1 No such user here"]
    config, port = mail_daemon_config(tmp_path / "data", model_server, imap_server, smtp_sink)
    with DaemonProcess(config, port) as daemon:
        result = wait_for_tool_text(model_server, "not sent")
        assert "550" in result and "refused it for good" in result
        email = wait_for_email_state(daemon, "failed")
        assert email["attempts"] == 1 and "550" in email["last_error"]
    assert smtp_sink.messages == [] and smtp_sink.refused == 1
    assert outbox_states(tmp_path / "data") == ["failed"]
