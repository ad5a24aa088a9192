"""A person on XMPP, for the tests: a real slixmpp client on its own thread and loop.

The tests are synchronous (they drive a `wakeful run` child); this client runs in
a thread of its own and collects what it receives, so a test can say something
and wait for what comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import slixmpp

from tests.prosody_server import ProsodyServer

T = TypeVar("T")


@dataclass(frozen=True)
class Received:
    sender: str  # bare JID
    body: str  # "" for a chat state alone
    chat_state: str  # "composing", "active", … or ""
    at: float  # time.monotonic() when it arrived (the latency benchmark reads it)


class XmppUser:
    """``jid`` logged in to ``server`` (TLS, its certificate trusted) until closed."""

    def __init__(self, server: ProsodyServer, jid: str, password: str) -> None:
        self.jid = jid
        self.received: list[Received] = []
        self._cond = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._login_args = (server.port, server.cert if server.tls else None, password)
        self._xmpp = self._call(self._login, *self._login_args)

    def reconnect(self) -> None:
        """Log in again (the server was restarted); what was received is kept."""

        async def again() -> slixmpp.ClientXMPP:
            self._xmpp.abort()
            return await self._login(*self._login_args)

        self._xmpp = self._call(again)

    def _call(self, make: Callable[..., Any], *args: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(make(*args), self._loop).result(timeout=30)

    async def _login(self, port: int, cert: Path | None, password: str) -> slixmpp.ClientXMPP:
        """Over STARTTLS trusting ``cert``; with no cert, over plaintext (a server without TLS)."""
        xmpp = slixmpp.ClientXMPP(f"{self.jid}/test", password)
        xmpp.enable_direct_tls = False
        for plugin in ("xep_0030", "xep_0085", "xep_0199"):
            xmpp.register_plugin(plugin)
        if cert is not None:
            xmpp.ca_certs = cert
        else:
            xmpp.enable_starttls, xmpp.enable_plaintext = False, True
            xmpp.plugin["feature_mechanisms"].unencrypted_scram = True
        started = asyncio.Event()
        xmpp.add_event_handler("session_start", lambda _: started.set())
        xmpp.add_event_handler("message", self._message)
        # slixmpp's XEP-0085 plugin takes a bodiless chat state from the "message" event
        xmpp.add_event_handler(
            "chatstate", lambda message: None if message["body"] else self._message(message)
        )
        xmpp.connect("127.0.0.1", port)
        await asyncio.wait_for(started.wait(), 20)
        xmpp.send_presence()
        return xmpp

    def _message(self, message: Any) -> None:
        state = message["chat_state"] if message.xml.find(
            "{http://jabber.org/protocol/chatstates}*"
        ) is not None else ""  # fmt: skip
        sender, body = str(message["from"].bare), str(message["body"])
        item = Received(sender, body, str(state or ""), time.monotonic())
        with self._cond:
            self.received.append(item)
            self._cond.notify_all()

    def say(self, to: str, text: str) -> None:
        """Send, and return once the server has it (a ping answered after it)."""

        async def send() -> None:
            self._xmpp.send_message(mto=to, mbody=text, mtype="chat")
            await self._xmpp.plugin["xep_0199"].send_ping(slixmpp.JID(to.split("@")[1]))

        self._call(send)

    def messages_from(self, jid: str) -> list[str]:
        with self._cond:
            return [r.body for r in self.received if r.sender == jid and r.body]

    def wait_for(self, probe: Callable[[], T | None], what: str, timeout_s: float = 30.0) -> T:
        found: list[T] = []

        def check() -> bool:
            value = probe()
            if value:
                found.append(value)
            return bool(value)

        with self._cond:
            if not self._cond.wait_for(check, timeout_s):
                raise TimeoutError(f"{what}: not within {timeout_s} s; got {self.received[-10:]}")
        return found[0]

    def wait_messages(self, jid: str, count: int, timeout_s: float = 30.0) -> list[str]:
        return self.wait_for(
            lambda: (bodies := self.messages_from(jid)) and len(bodies) >= count and bodies,
            f"{count} messages from {jid}",
            timeout_s,
        )

    def close(self) -> None:
        async def bye() -> None:
            self._xmpp.disconnect(wait=1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._xmpp.disconnected), 5)
            # slixmpp leaves its stream's tasks behind: ended here, not at interpreter exit
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self._call(bye)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            # The client's __del__ schedules on its loop: collected while the loop is open.
            del self._xmpp
            gc.collect()
            if not self._loop.is_running():
                self._loop.close()

    def __enter__(self) -> XmppUser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def no_more_than(user: XmppUser, jid: str, count: int, settle_s: float = 1.0) -> list[str]:
    """What ``jid`` sent, after ``settle_s`` more in which nothing else may arrive: a
    duplicate has no event to wait on, so the test waits a bounded while for it."""
    time.sleep(settle_s)
    bodies = user.messages_from(jid)
    assert len(bodies) == count, bodies
    return bodies
