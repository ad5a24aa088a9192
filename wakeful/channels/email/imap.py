"""A blocking IMAP connection (imapclient) driven from a worker thread.

Every method blocks and must run in a thread; :func:`in_thread` runs one and
makes cancellation prompt by shutting the socket down from outside (a thread
blocked in IDLE's ``select`` then wakes with an error at once). No polling
wakes an idle connection: IDLE waits in one ``select`` for up to the
re-issue interval.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from wakeful.channels.email.config import EmailAccountConfig

T = TypeVar("T")

FETCH_BATCH = 50


class AuthFailed(Exception):
    """The server refused the credentials (never retried fast; never logs the password)."""


class Interrupted(Exception):
    """The connection was shut down from outside (shutdown or cancellation)."""


class ImapConnection:
    def __init__(self, account: EmailAccountConfig, password: str) -> None:
        self.account = account
        self._password = password
        self._client: IMAPClient | None = None
        self._interrupted = threading.Event()

    # --- lifecycle ---------------------------------------------------------

    def connect(self) -> None:
        a = self.account
        context = ssl.create_default_context()
        client = IMAPClient(
            a.imap_host,
            a.imap_port,
            ssl=a.imap_security == "tls",
            ssl_context=context if a.imap_security == "tls" else None,
            timeout=a.timeout_s,
        )
        self._client = client
        if self._interrupted.is_set():
            self.interrupt()
            raise Interrupted()
        if a.imap_security == "starttls":
            client.starttls(context)
        try:
            client.login(a.username, self._password)
        except LoginError:
            raise AuthFailed(f"the IMAP server refused the login for {a.username}") from None

    @property
    def client(self) -> IMAPClient:
        if self._client is None:
            raise RuntimeError("connect() first")
        return self._client

    def interrupt(self) -> None:
        """Wake a blocked call at once; safe from any thread."""
        self._interrupted.set()
        if self._client is not None:
            with contextlib.suppress(OSError):
                self._client.socket().shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self._client is None:
            return
        try:
            if not self._interrupted.is_set():
                self._client.logout()
        except Exception:  # closing a broken connection: nothing left to save
            pass
        with contextlib.suppress(Exception):  # already broken: nothing left to close
            self._client.shutdown()
        self._client = None

    # --- reading -----------------------------------------------------------

    def select(self, mailbox: str, *, readonly: bool = True) -> tuple[int, int]:
        """Select ``mailbox``; returns (UIDVALIDITY, UIDNEXT)."""
        info = self.client.select_folder(mailbox, readonly=readonly)
        uidvalidity = int(info[b"UIDVALIDITY"])
        uidnext = info.get(b"UIDNEXT")
        if uidnext is None:  # not every server volunteers it at SELECT
            uidnext = self.client.folder_status(mailbox, [b"UIDNEXT"])[b"UIDNEXT"]
        return uidvalidity, int(uidnext)

    @property
    def has_idle(self) -> bool:
        return bool(self.client.has_capability("IDLE"))

    def uidnext(self, mailbox: str) -> int:
        """The mailbox's UIDNEXT now (STATUS; what the self-check compares)."""
        return int(self.client.folder_status(mailbox, [b"UIDNEXT"])[b"UIDNEXT"])

    def unseen(self, mailbox: str) -> int:
        """How many messages of ``mailbox`` lack \\Seen now (STATUS (UNSEEN): the server
        keeps the count, nothing is fetched)."""
        return int(self.client.folder_status(mailbox, [b"UNSEEN"])[b"UNSEEN"])

    def uids_after(self, last_uid: int) -> list[int]:
        # What the server announced before this search, the search itself covers; what
        # it announces from here on (inside the SEARCH or FETCH replies) must wake the
        # next wait_for_change (_take_announced).
        _take_announced(self.client)
        # "N:*" always matches the highest UID even when it is below N; filter here.
        found = self.client.search(["UID", f"{last_uid + 1}:*"])
        return sorted(uid for uid in found if uid > last_uid)

    def fetch_raw(self, uids: list[int]) -> dict[int, bytes]:
        """Full messages without setting \\Seen (BODY.PEEK)."""
        result: dict[int, bytes] = {}
        for start in range(0, len(uids), FETCH_BATCH):
            batch = uids[start : start + FETCH_BATCH]
            for uid, data in self.client.fetch(batch, ["BODY.PEEK[]"]).items():
                raw = data.get(b"BODY[]")
                if isinstance(raw, bytes):
                    result[int(uid)] = raw
        return result

    def wait_for_change(self, timeout_s: float) -> bool:
        """IDLE until the server says something (True) or ``timeout_s`` passes (False).

        The wait is one ``select`` on the socket; the responses are read by
        ``idle_done`` in blocking mode, because ``idle_check`` fails on a response
        split across TCP segments ("unterminated line").
        """
        client = self.client
        # Mail that came while the watcher searched or fetched was announced inside
        # those replies ("* 7 EXISTS" before the tagged OK); imaplib filed it away and
        # IDLE will not announce it again, so it would wait for the re-issue.
        if _take_announced(client):
            return True
        client.idle()
        if _take_announced(client):  # announced between IDLE and its "+ idling"
            client.idle_done()
            return True
        # The server may say "* 3 EXISTS" (mail that came since the last search) in the
        # same segment as IDLE's "+ idling": then it already sits in the client's read
        # buffer, and a select on the socket would wait the whole interval for it.
        readable: list[Any] = [True] if _already_read(client) else []
        if not readable:
            readable, _, _ = select.select([client.socket()], [], [], timeout_s)
        if self._interrupted.is_set():
            raise Interrupted()
        _, responses = client.idle_done()
        return bool(readable) or any(_is_change(r) for r in responses)

    def noop(self) -> None:
        self.client.noop()


def _take_announced(client: IMAPClient) -> bool:
    """Did the server announce new mail (EXISTS/RECENT) in a reply since the last call?"""
    filed = client._imap.untagged_responses  # imaplib's store of unasked-for responses
    found = [filed.pop(name, None) for name in ("EXISTS", "RECENT")]
    return any(found)


def _already_read(client: IMAPClient) -> bool:
    """Is a response waiting in the client's buffers, where a select cannot see it?"""
    sock = client.socket()
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True  # decrypted by the TLS layer, not yet read
    reader = client._imap.file  # imaplib's buffered reader over the socket
    timeout = sock.gettimeout()
    sock.setblocking(False)  # a peek must not wait when nothing is buffered
    try:
        return bool(reader.peek(1))
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return False
    finally:
        sock.settimeout(timeout)


def _is_change(response: Any) -> bool:
    return (
        isinstance(response, tuple)
        and len(response) >= 2
        and response[1]
        in (
            b"EXISTS",
            b"RECENT",
        )
    )


async def in_thread(conn: ImapConnection, work: Callable[[], T]) -> T:
    """Run blocking ``work`` in a thread; on cancellation interrupt ``conn`` and wait for it."""
    finished = False

    async def interrupt_on_cancel() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            if not finished:
                conn.interrupt()

    error: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(interrupt_on_cancel)
        try:
            # Not abandoned on cancel: the thread ends promptly once its socket is shut.
            result = await anyio.to_thread.run_sync(work)
        except Exception as exc:  # raised below, not wrapped in an ExceptionGroup
            error = exc
        finally:
            finished = True
            group.cancel_scope.cancel()
    if error is not None:
        # An error caused by our own interrupt must surface as the cancellation it is.
        await anyio.lowlevel.checkpoint_if_cancelled()
        raise error
    return result


async def with_mailbox(
    account: EmailAccountConfig,
    password: str,
    mailbox: str | None,
    work: Callable[[ImapConnection], T],
    *,
    readonly: bool = False,
) -> T:
    """Open a short-lived connection, select ``mailbox``, run ``work`` and close (a tool call)."""
    conn = ImapConnection(account, password)

    def run() -> T:
        try:
            conn.connect()
            if mailbox is not None:
                conn.select(mailbox, readonly=readonly)
            return work(conn)
        finally:
            conn.close()

    return await in_thread(conn, run)
