"""Real mail servers on loopback for the email tests: pymap (IMAP) and aiosmtpd (SMTP).

``ImapServer`` runs ``pymap`` as a child process, so a test can stop it and
start it again on the same port. Its ``maildir`` backend keeps mail and
UIDVALIDITY on disk across restarts (pymap notices new mail within about a
second); its ``dict`` backend is in memory and wakes IDLE clients at once.
``SmtpSink`` records every message it accepts.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any, Literal

import pytest
from aiosmtpd.controller import Controller
from imapclient import IMAPClient
from pysasl.hashing import BuiltinHash

from tests.support.ports import free_port

USER = "alice@example.test"
PASSWORD = "mail-secret-42"
# pymap hashes passwords with 500 000 PBKDF2 rounds (~0.5 s a login); tests log in often.
_START = (
    "import pymap.config, pysasl.hashing; "
    "pymap.config.BuiltinHash = lambda: pysasl.hashing.BuiltinHash(rounds=1000); "
    "from pymap.main import main; main()"
)


def wait_for_port(port: int, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on 127.0.0.1:{port}") from None
            time.sleep(0.05)  # no event tells us the child is listening


class ImapServer:
    """A pymap server in a child process, with one user."""

    def __init__(self, root: Path, backend: Literal["maildir", "dict"] = "maildir") -> None:
        self.root = root
        self.backend = backend
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        if backend == "maildir":
            root.mkdir(parents=True, exist_ok=True)
            hashed = BuiltinHash(rounds=1000).hash(PASSWORD)  # fast logins for tests
            (root / "pymap-etc-passwd").write_text(f"{USER}:::::alice:\n")
            (root / "pymap-etc-shadow").write_text(f"{USER}:{hashed}\n")

    def start(self) -> ImapServer:
        # pymap's maildir locks are files (``dovecot-uidlist.lock``, ...) that expire
        # only after 600 s. stop() kills the server, sometimes while it holds one; the
        # restarted server would then wait on the dead one's lock and answer SELECT only
        # after the client gave up (a test's "the mailbox comes back" timed out so).
        # No server runs here now, so every lock file is stale: as an operator would
        # after a crash, remove them.
        if self.backend == "maildir":
            for stale in self.root.rglob("*.lock"):
                stale.unlink(missing_ok=True)
        args = [sys.executable, "-c", _START, "--host", "127.0.0.1", "--port", str(self.port)]
        args += ["--no-tls", "--no-service", "admin"]
        if self.backend == "maildir":
            args += ["maildir", str(self.root)]
        else:
            args += ["dict", "--demo-user", USER, "--demo-password", PASSWORD]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def client(self) -> IMAPClient:
        client = IMAPClient("127.0.0.1", self.port, ssl=False, timeout=10)
        client.login(USER, PASSWORD)
        return client

    def append(self, raw: bytes, mailbox: str = "INBOX") -> int:
        """APPEND one message; returns its UID."""
        with self.client() as client:
            response = client.append(mailbox, raw)
        # b"[APPENDUID <uidvalidity> <uid>] APPEND completed."
        return int(response.split(b"]")[0].split()[-1])

    def uids(self, mailbox: str, criteria: Any = "ALL") -> list[int]:
        with self.client() as client:
            if not client.folder_exists(mailbox):
                return []
            client.select_folder(mailbox, readonly=True)
            return sorted(client.search(criteria))

    def fetch(self, mailbox: str, uid: int, items: list[str]) -> dict[bytes, Any]:
        with self.client() as client:
            client.select_folder(mailbox, readonly=True)
            result: dict[bytes, Any] = client.fetch([uid], items)[uid]
            return result

    def account(self, name: str = "work", **extra: Any) -> dict[str, Any]:
        """An ``[[email.accounts]]`` entry pointing at this server."""
        defaults = {"password": PASSWORD, "address": USER}
        # Reconnects fast: the tests stop and start servers under a running watcher.
        defaults |= {"reconnect_min_s": 0.2, "reconnect_max_s": 1.0}
        return imap_account(self.port, USER, name, **(defaults | extra))


@dataclass
class ReceivedMail:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes


class _Recorder:
    def __init__(self, sink: SmtpSink) -> None:
        self._sink = sink

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        refusal = self._sink.next_refusal()
        if refusal is not None:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        mail = ReceivedMail(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.content))
        self._sink.record(mail)
        return "250 Message accepted for delivery"


class SmtpSink:
    """An SMTP server on loopback that accepts and records every message."""

    def __init__(self) -> None:
        self.port = free_port()
        self.messages: list[ReceivedMail] = []
        self.on_receive: Callable[[ReceivedMail], None] | None = None
        # Replies to the next RCPT commands instead of accepting (e.g. "451 4.3.0 try
        # later", "550 5.1.1 no such user"), one per RCPT, in order.
        self.refusals: list[str] = []
        self.refused = 0
        self._cond = threading.Condition()
        self._controller = Controller(_Recorder(self), hostname="127.0.0.1", port=self.port)

    def record(self, mail: ReceivedMail) -> None:
        with self._cond:
            self.messages.append(mail)
            self._cond.notify_all()
        if self.on_receive is not None:
            self.on_receive(mail)

    def next_refusal(self) -> str | None:
        with self._cond:
            if not self.refusals:
                return None
            self.refused += 1
            self._cond.notify_all()
            return self.refusals.pop(0)

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[ReceivedMail]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.messages) >= count, timeout_s):
                raise TimeoutError(f"{len(self.messages)} messages received, wanted {count}")
            return list(self.messages)

    def account(self) -> dict[str, Any]:
        return {"smtp_host": "127.0.0.1", "smtp_port": self.port, "smtp_security": "none"}

    def __enter__(self) -> SmtpSink:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._controller.stop()


def make_message(
    sender: str,
    subject: str,
    body: str,
    *,
    to: str = USER,
    message_id: str | None = None,
    html: str | None = None,
    calendar: str | None = None,
    attachment: tuple[str, bytes] | None = None,
    date: str | None = None,
    authentication_results: tuple[str, ...] = (),
) -> bytes:
    """A real RFC 5322 message as a mail client would send it; ``authentication_results``
    are headers on top, as receiving servers prepend them (the first is the newest)."""
    msg = EmailMessage()
    for value in authentication_results:
        msg["Authentication-Results"] = value
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = date or format_datetime(datetime.now(UTC))
    msg["Message-ID"] = message_id or make_msgid(domain="example.test")
    msg.set_content(body)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    if calendar is not None:
        msg.add_attachment(
            calendar.encode(), maintype="text", subtype="calendar", filename="invite.ics"
        )
    if attachment is not None:
        name, data = attachment
        msg.add_attachment(data, maintype="application", subtype="pdf", filename=name)
    return msg.as_bytes().replace(b"\n", b"\r\n")


@pytest.fixture
def imap_server(tmp_path: Path) -> Iterator[ImapServer]:
    """A pymap server with an on-disk maildir under tmp_path."""
    server = ImapServer(tmp_path / "imap").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fast_imap_server() -> Iterator[ImapServer]:
    """An in-memory pymap server whose IDLE responses are immediate."""
    server = ImapServer(Path("/nonexistent"), backend="dict").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def smtp_sink() -> Iterator[SmtpSink]:
    """An aiosmtpd server that records what it receives."""
    with SmtpSink() as sink:
        yield sink


def imap_account(port: int, username: str, name: str, **extra: Any) -> dict[str, Any]:
    """An ``[[email.accounts]]`` entry for an IMAP server on loopback without TLS."""
    return {
        "name": name,
        "imap_host": "127.0.0.1",
        "imap_port": port,
        "imap_security": "none",
        "username": username,
        **extra,
    }
