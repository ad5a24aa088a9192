"""XMPP latency: a message to the account → the model, and the model's end → the owner's client.

The daemon runs in-process (tests/daemon_harness.py) with one `[[chat.xmpp]]`
account on a real Prosody (tests/prosody_server.py, STARTTLS with its
self-signed certificate) and the fake model server; the owner is a real slixmpp
client on a thread of this process (tests/xmpp_user.py). The HTTP API path is
measured in the same run, alternating with it, one warm-up of each first
(helpers of bench/chat_latency.py).

* chat → model: from just before the owner's client sends the message to the
  model server's `received_at` of the request. The path: Prosody archives and
  routes it, the live message wakes the archive read, one MAM query, the event
  committed with its cursor, the session loop, the request.
* reply → platform: from the model server writing the stream's last event
  ([DONE]) to the owner's client receiving the reply (the outbox, the message,
  Prosody routing it; the confirming ping's answer comes after).

Targets (issue 11's, as for Telegram): chat → model within 2× the HTTP path;
reply → platform within 10 ms p99 of the model finishing.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio

from bench.chat_latency import StampedModelServer, http_iteration
from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    percentile,
    print_ratios,
    print_table,
    quiet_daemon_logs,
    run_like_the_daemon,
)
from tests.daemon_harness import Harness, daemon_settings, harness
from tests.prosody_server import ProsodyServer
from tests.xmpp_daemon import PASSWORDS, register_people, write_password, xmpp_entry
from tests.xmpp_user import XmppUser


async def xmpp_iteration(
    model: StampedModelServer, owner: XmppUser, bot: str, i: int
) -> tuple[float, float]:
    index, received_before = len(model.requests), len(owner.messages_from(bot))
    sent = time.monotonic()
    await anyio.to_thread.run_sync(owner.say, bot, f"hello #{i}")
    request = (await model.await_requests(index + 1))[index]
    finished = await model.await_finished(index)
    await anyio.to_thread.run_sync(owner.wait_messages, bot, received_before + 1)
    arrived = [r.at for r in owner.received if r.sender == bot and r.body][received_before]
    return request.received_at - sent, arrived - finished


async def account_ok(h: Harness) -> bool:
    components = (await h.client.get("/api/status")).json()["components"]
    return bool(components["chat.xmpp:home"]["ok"])


async def ready(h: Harness) -> None:
    with anyio.fail_after(30):
        while not await account_ok(h):  # noqa: ASYNC110 - the account's health has no event
            await anyio.sleep(0.05)


async def main(n: int) -> None:
    quiet_daemon_logs()
    keys = ("xmpp_in", "xmpp_out", "http_in", "http_out")
    samples: dict[str, list[float]] = {key: [] for key in keys}
    with tempfile.TemporaryDirectory() as tmp, StampedModelServer() as model:
        prosody = ProsodyServer(Path(tmp)).start()
        try:
            bot, owner_jid, _ = register_people(prosody)
            entry = xmpp_entry(prosody, bot, [owner_jid], write_password(Path(tmp)))
            settings = daemon_settings(Path(tmp) / "data", model.base_url, chat={"xmpp": [entry]})
            with XmppUser(prosody, owner_jid, PASSWORDS["owner"]) as owner:
                async with harness(settings) as h:
                    await ready(h)
                    for i in range(n + 1):  # the first of each is an unmeasured warm-up
                        measured = await xmpp_iteration(model, owner, bot, i)
                        measured += await http_iteration(h, model, i)
                        if i:
                            for key, value in zip(keys, measured, strict=True):
                                samples[key].append(value)
        finally:
            prosody.close()
        assert model.violations == [], model.violations
    report(samples)


def report(samples: dict[str, list[float]]) -> None:
    print_table(
        LATENCY_HEADER,
        [
            ms_row("HTTP: POST /api/messages → model request", samples["http_in"]),
            ms_row("XMPP: owner's client sends → model request", samples["xmpp_in"]),
            ms_row("HTTP: model [DONE] → SSE reply", samples["http_out"]),
            ms_row("XMPP: model [DONE] → owner's client receives", samples["xmpp_out"]),
        ],
    )
    print_ratios("XMPP", samples["xmpp_in"], samples["http_in"], " (target ≤ 2×)")
    p99 = percentile(samples["xmpp_out"], 99) * 1000
    print(f"reply → XMPP client p99: {p99:.2f} ms after the model finished (target ≤ 10 ms)")


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=100)
    run_like_the_daemon(main, parser.parse_args().n)
