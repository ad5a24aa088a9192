"""IDLE sees mail that the server announces in the same segment as its "+ idling".

A scripted IMAP server (only the commands the watcher sends) answers IDLE with the
continuation and an EXISTS in one write — what a real server does when mail came
between the watcher's last search and its IDLE. The response then sits in the
client's read buffer, where a select on the socket cannot see it.
"""

from __future__ import annotations

import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mail_servers import PASSWORD, ImapServer, make_message
from tests.support.mailbox_watch import Inbox, watch_mailbox
from wakeful.channels.email import watcher as watcher_module
from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.email.imap import ImapConnection

CAPABILITIES = b"IMAP4rev1 IDLE"


class _ScriptedImap(socketserver.StreamRequestHandler):
    idle_reply = b"+ idling\r\n* 2 EXISTS\r\n"  # one segment

    def handle(self) -> None:
        self.wfile.write(b"* OK [CAPABILITY " + CAPABILITIES + b"] ready\r\n")
        for line in self.rfile:
            tag, _, rest = line.rstrip(b"\r\n").partition(b" ")
            command = rest.split(b" ", 1)[0].upper()
            if command == b"CAPABILITY":
                self.wfile.write(b"* CAPABILITY " + CAPABILITIES + b"\r\n")
            elif command == b"IDLE":
                self.wfile.write(self.idle_reply)
                self.rfile.readline()  # DONE
            elif command == b"LOGOUT":
                self.wfile.write(b"* BYE\r\n" + tag + b" OK LOGOUT completed\r\n")
                return
            self.wfile.write(tag + b" OK " + command + b" completed\r\n")


@pytest.fixture(params=["announces", "quiet"])
def scripted_imap(request: pytest.FixtureRequest) -> Iterator[int]:
    handler = type("Handler", (_ScriptedImap,), {})
    if request.param == "quiet":
        handler.idle_reply = b"+ idling\r\n"
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _wait(port: int, timeout_s: float) -> tuple[bool, float]:
    account = EmailAccountConfig(
        name="work", imap_host="127.0.0.1", imap_port=port, imap_security="none", username="me"
    )
    connection = ImapConnection(account, "secret")
    connection.connect()
    try:
        started = time.monotonic()
        changed = connection.wait_for_change(timeout_s=timeout_s)
        return changed, time.monotonic() - started
    finally:
        connection.close()


def test_idle_returns_for_mail_announced_with_its_continuation_and_waits_otherwise(
    scripted_imap: int, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["scripted_imap"] == "announces":
        changed, waited = _wait(scripted_imap, timeout_s=30)
        # Without looking at the buffer it waited the whole 30 s (the re-issue interval).
        assert changed and waited < 15, waited
    else:  # the buffer check must not turn a quiet IDLE into a busy return
        changed, waited = _wait(scripted_imap, timeout_s=1.0)
        assert not changed and waited >= 0.9, waited


@pytest.mark.anyio
async def test_mail_that_came_just_before_idle_arrives_without_waiting_for_the_reissue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pymap announces mail that came between the watcher's last command and its IDLE
    only when that IDLE ends, not when it starts. The account keeps
    its default re-issue (29 min): the mail must still come within seconds, because
    the first IDLE after a sync is a short one."""
    server = ImapServer(Path("/nonexistent"), backend="dict").start()
    appended = threading.Event()

    class Racing(ImapConnection):
        def wait_for_change(self, timeout_s: float) -> bool:
            # The stranger's timing: the sync is over, IDLE not yet sent.
            self.client._imap.untagged_responses.clear()  # what the sync left filed
            if not appended.is_set():
                appended.set()
                with server.client() as other:
                    other.append("INBOX", make_message("pat@example.test", "just before", "hi"))
            return super().wait_for_change(timeout_s)

    monkeypatch.setattr(watcher_module, "ImapConnection", Racing)
    account = EmailAccountConfig.model_validate(server.account())
    assert account.idle_reissue_s == 29 * 60  # the default, on purpose
    inbox = Inbox()

    async def work() -> None:
        await inbox.until(lambda: inbox.subjects == ["just before"], timeout_s=15)

    try:
        await watch_mailbox(account, PASSWORD, tmp_path, inbox, work)
    finally:
        server.stop()
