"""IRC latency: an IRC message → the model, and the model's end → the IRC user.

The daemon runs in-process (tests/daemon_harness.py) with one `[[chat.irc]]`
connection to a real ngircd on loopback (tests/ngircd_server.py), the fake
model server in a thread; people on IRC are raw-socket clients
(tests/irc_user.py), one per iteration with `session = "per-user"`, so every
message finds an idle agent, as bench.chat_latency does for Telegram. The IRC
and HTTP paths alternate, one warm-up of each first; the HTTP half and the
stamped model server are bench.chat_latency's.

* chat → model: from the user's socket write of `PRIVMSG wakeful :…` (through
  ngircd, which relays it) to the model server's `received_at`; next to the HTTP
  API path, `POST /api/messages` → `received_at`.
* reply → platform: from the model writing [DONE] to the user's client reading
  the PRIVMSG the server relayed; next to [DONE] → the SSE `reply` item.

Iterations are spaced by the flood control's send interval (1 s by default),
so each reply finds a full send budget: this measures the path, not the
throttle (a burst of replies waits for it by design, see docs/irc.md).
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
    print_ratios,
    print_table,
    quiet_daemon_logs,
    run_like_the_daemon,
)
from tests.daemon_harness import daemon_settings, harness
from tests.irc_daemon import BOT, irc_config, until_connected
from tests.irc_user import IrcUser
from tests.ngircd_server import Ngircd


async def irc_iteration(model: StampedModelServer, user: IrcUser, i: int) -> tuple[float, float]:
    index = len(model.requests)
    written = time.monotonic()
    user.say(BOT, f"hello #{i}")
    request = (await model.await_requests(index + 1))[index]
    finished = await model.await_finished(index)
    [reply] = await anyio.to_thread.run_sync(
        lambda: [m for m in user.wait_said(lambda s: any(m.sender == BOT for m in s)) if
                 m.sender == BOT]
    )  # fmt: skip
    return request.received_at - written, reply.received_at - finished


async def main(n: int) -> None:
    quiet_daemon_logs()
    samples: dict[str, list[float]] = {key: [] for key in ("irc_in", "irc_out", "in", "out")}
    with tempfile.TemporaryDirectory() as tmp, StampedModelServer() as model:
        directory = Path(tmp)
        with Ngircd(directory / "ngircd") as ircd:
            nicks = [f"user{i}" for i in range(n + 1)]
            entry = irc_config(
                ircd, allowed_users=[f"{nick}!*@127.0.0.1" for nick in nicks], session="per-user"
            )
            settings = daemon_settings(directory / "data", model.base_url, chat={"irc": [entry]})
            async with harness(settings) as h:
                await until_connected(h)
                # Everyone connected first: ngircd holds a new client's commands for
                # about a second after registration (its penalty time), which is not
                # the daemon's latency.
                users = [await anyio.to_thread.run_sync(IrcUser, ircd.port, nick) for nick in nicks]
                await anyio.sleep(2)
                try:
                    for i, user in enumerate(users):  # the first is an unmeasured warm-up
                        measured = await irc_iteration(model, user, i)
                        measured += await http_iteration(h, model, i)
                        if i:
                            for key, value in zip(samples, measured, strict=True):
                                samples[key].append(value)
                        await anyio.sleep(1.0)  # the default send interval: a full budget
                finally:
                    for user in users:
                        user.close()
        assert model.violations == [], model.violations
    print_table(
        LATENCY_HEADER,
        [
            ms_row("HTTP: POST /api/messages → model request", samples["in"]),
            ms_row("IRC: PRIVMSG written → model request (via ngircd)", samples["irc_in"]),
            ms_row("HTTP: model [DONE] → SSE reply", samples["out"]),
            ms_row("IRC: model [DONE] → PRIVMSG read by the user", samples["irc_out"]),
        ],
    )
    print_ratios("IRC", samples["irc_in"], samples["in"])


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=20)
    run_like_the_daemon(main, parser.parse_args().n)
