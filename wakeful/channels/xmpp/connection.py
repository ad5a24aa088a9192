"""One XMPP log-in with slixmpp, and what the channel asks of it.

A fresh ``ClientXMPP`` per connection: a failed or dropped one is thrown away
and the component connects again with back-off (no stream-management resumption
is needed: the archive, not the stream, is what no message may be lost from —
see :mod:`.archive`). slixmpp runs on the asyncio loop the daemon runs on.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import anyio
import anyio.abc
import slixmpp
import structlog
from slixmpp.exceptions import IqError, IqTimeout

from wakeful.channels.xmpp.config import XmppConfig

log = structlog.get_logger(__name__)
# slixmpp logs every stanza it sends at DEBUG, a SASL PLAIN log-in (its password, base64
# encoded: no redaction would catch it) included. Its INFO and above say what matters.
logging.getLogger("slixmpp").setLevel(logging.INFO)

PLUGINS = ("xep_0030", "xep_0059", "xep_0085", "xep_0199", "xep_0313", "xep_0359")
LOGIN_TIMEOUT_S = 30.0
IQ_TIMEOUT_S = 30


class XmppUnavailable(Exception):
    """Not connected, or the server refused or did not answer; try again later."""


class XmppUnknownArchiveId(Exception):
    """The archive no longer knows the cursor's id (expired): read it from its start."""


@dataclass(frozen=True)
class Archived:
    """One message of the account's archive (XEP-0313)."""

    archive_id: str  # the server's id for it (also its stanza-id, XEP-0359)
    sender: str  # bare JID, lower case
    recipient: str
    type: str
    body: str
    stamp: datetime | None


class XmppConnection:
    """One connection, from log-in to its end (``closed`` is set then)."""

    def __init__(self, config: XmppConfig, password: str, on_message: Callable[[], None]) -> None:
        self.config = config
        self.closed = anyio.Event()
        self._ready = anyio.Event()
        self._failure = ""
        xmpp = slixmpp.ClientXMPP(config.full_jid, password)
        if config.ca_file is not None:
            xmpp.ca_certs = config.ca_file
        # One way in, the configured one: never a plaintext or other attempt after a failure.
        xmpp.enable_direct_tls = config.direct_tls
        xmpp.enable_starttls = not config.direct_tls and not config.allow_plaintext
        xmpp.enable_plaintext = config.allow_plaintext
        if not config.allow_plaintext:
            # slixmpp refuses every SASL mechanism on an unencrypted stream by default: a
            # server without STARTTLS is never given the password. Older TLS is refused too.
            context = ssl.create_default_context()
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            xmpp.ssl_context = context
        for plugin in PLUGINS:
            xmpp.register_plugin(plugin)
        if config.allow_plaintext:
            mechanisms = xmpp.plugin["feature_mechanisms"]
            mechanisms.unencrypted_scram = True
            mechanisms.unencrypted_plain = True
        # Nobody's presence subscription is granted automatically: strangers see nothing.
        xmpp.auto_authorize = None
        xmpp.auto_subscribe = False
        xmpp.add_event_handler("session_start", self._started)
        xmpp.add_event_handler("failed_all_auth", self._auth_failed)
        xmpp.add_event_handler("connection_failed", self._connection_failed)
        xmpp.add_event_handler("disconnected", self._disconnected)
        xmpp.add_event_handler("message", self._message)
        self._on_message = on_message
        self.xmpp = xmpp

    async def open(self) -> None:
        """Connect and log in; XmppUnavailable says why not."""
        host = self.config.server or None
        self.xmpp.connect(host, self.config.port if host else None)
        with anyio.move_on_after(LOGIN_TIMEOUT_S):
            await _first(self._ready, self.closed)
        if self._ready.is_set() and not self.closed.is_set():
            return
        self.abort()
        raise XmppUnavailable(self._failure or f"no session within {LOGIN_TIMEOUT_S:.0f} s")

    @property
    def connected(self) -> bool:
        return self._ready.is_set() and not self.closed.is_set()

    def abort(self) -> None:
        self.xmpp.cancel_connection_attempt()  # one still being made (slixmpp retries)
        self.xmpp.abort()
        self.closed.set()

    def fail(self, why: str) -> None:
        """End this connection for ``why`` (the component connects again)."""
        self._failure = why
        self.abort()

    async def close(self) -> None:
        if not self.closed.is_set():
            self.xmpp.disconnect(wait=1.0)
            with anyio.move_on_after(2.0):
                await self.closed.wait()
        self.abort()
        # slixmpp ends its outgoing filter task only when the client is collected, which
        # that pending task prevents: ended here, so a thrown-away connection leaves nothing.
        filters = getattr(self.xmpp, "_run_out_filters", None)
        if filters is not None:
            filters.cancel()

    def send_message(self, to: str, body: str | None, chat_state: str | None) -> None:
        if not self.connected:
            raise XmppUnavailable("not connected to the server")
        message = self.xmpp.make_message(mto=to, mbody=body, mtype="chat")
        if chat_state is not None:
            message["chat_state"] = chat_state
        message.send()

    async def confirm(self) -> None:
        """Until the server has processed everything sent before: a ping (XEP-0199)
        to it is answered in order. Any answer, an error included, confirms; the
        connection ending first, or no answer in time, raises XmppUnavailable."""
        if not self.connected:
            raise XmppUnavailable("not connected to the server")
        answered: list[bool] = []

        async def ping(group: anyio.abc.TaskGroup) -> None:
            try:
                await self.xmpp.plugin["xep_0199"].send_ping(
                    slixmpp.JID(self.config.domain), timeout=IQ_TIMEOUT_S
                )
                answered.append(True)
            except IqError:  # an error is an answer too: what came before was processed
                answered.append(True)
            except IqTimeout:
                pass
            group.cancel_scope.cancel()

        async def lost(group: anyio.abc.TaskGroup) -> None:
            await self.closed.wait()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(ping, group)
            group.start_soon(lost, group)
        if not answered:
            raise XmppUnavailable("the server did not confirm (connection lost or no answer)")

    async def archive_page(self, after: str | None, limit: int) -> tuple[list[Archived], bool]:
        """Up to ``limit`` archived messages after ``after`` (None: from the start),
        oldest first, and whether they are the last."""
        rsm: dict[str, Any] = {"max": limit}
        if after is not None:
            rsm["after"] = after
        try:
            iq = await self.xmpp.plugin["xep_0313"].retrieve(rsm=rsm, timeout=IQ_TIMEOUT_S)
        except IqError as exc:
            if after is not None and exc.condition == "item-not-found":
                raise XmppUnknownArchiveId(after) from None
            raise XmppUnavailable(f"archive query refused: {exc.condition} {exc.text}") from None
        except IqTimeout:
            raise XmppUnavailable("archive query not answered") from None
        fin = iq.xml.find("{urn:xmpp:mam:2}fin")
        complete = fin is not None and fin.get("complete") in ("true", "1")
        items = [_archived(result) for result in iq["mam"]["results"]]
        return items, complete or not items

    async def last_archive_id(self) -> str | None:
        """The newest message's archive id; None when the archive is empty."""
        # iterator=True makes it an async iterator of pages (typed as an awaitable)
        pages = cast(
            "AsyncIterator[Any]",
            self.xmpp.plugin["xep_0313"].retrieve(
                iterator=True, reverse=True, rsm={"max": 1}, timeout=IQ_TIMEOUT_S
            ),
        )
        try:
            async for page in pages:
                results = page["mam"]["results"]
                return _archived(results[-1]).archive_id if results else None
        except (IqError, IqTimeout) as exc:
            raise XmppUnavailable(f"archive query failed: {exc}") from None
        return None

    def _started(self, event: Any) -> None:
        self.xmpp.send_presence()  # online: messages to the bare JID reach this resource too
        self._ready.set()

    def _auth_failed(self, event: Any) -> None:
        self._failure = (
            "log-in refused (wrong password, or no mechanism the server offers is allowed "
            "on this stream: a server without TLS is refused unless allow_plaintext)"
        )
        self.xmpp.abort()

    def _connection_failed(self, event: Any) -> None:
        # slixmpp would try again on its own: the component's back-off does that instead.
        self._failure = f"cannot connect: {event}"
        self.xmpp.cancel_connection_attempt()
        self.closed.set()

    def _disconnected(self, event: Any) -> None:
        if not self._failure:
            self._failure = f"disconnected: {event or 'by the server'}"
        self.closed.set()

    def _message(self, message: Any) -> None:
        # Every message is read from the archive, in its order; this only says "look now".
        if message["type"] in ("chat", "normal") and message["body"]:
            self._on_message()

    @property
    def failure(self) -> str:
        return self._failure


def _archived(result: Any) -> Archived:
    forwarded = result["mam_result"]["forwarded"]
    stanza = forwarded["stanza"]
    delayed = forwarded.xml.find("{urn:xmpp:delay}delay") is not None
    stamp = forwarded["delay"]["stamp"] if delayed else None
    return Archived(
        archive_id=str(result["mam_result"]["id"]),
        sender=str(stanza["from"].bare).lower(),
        recipient=str(stanza["to"].bare).lower(),
        type=str(stanza["type"]),
        body=str(stanza["body"]),
        stamp=stamp if isinstance(stamp, datetime) else None,
    )


async def _first(*events: anyio.Event) -> None:
    async with anyio.create_task_group() as group:
        for event in events:

            async def wait(event: anyio.Event = event) -> None:
                await event.wait()
                group.cancel_scope.cancel()

            group.start_soon(wait)
