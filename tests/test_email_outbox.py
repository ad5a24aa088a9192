"""The outbox: a crash between "sent" and "recorded" never sends the message twice."""

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
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        return [row[0] for row in conn.execute("SELECT state FROM email_outbox")]


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
    smtp_sink.on_receive = None
    with DaemonProcess(config, port) as second:
        second.send("send it again")
        result = wait_for_tool_text(model_server, "already sent")
    assert "not sent again" in result
    assert len(smtp_sink.messages) == 1
    assert outbox_states(data_dir) == ["sent"]
