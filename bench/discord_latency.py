"""Discord latency: a Discord message → the model, and the model's end → Discord.

The daemon runs in-process (tests/daemon_harness.py) with one `[[chat.discord]]`
bot connected to the fake Discord (tests/fakes/discord_api.py: a Gateway
websocket and the REST API on loopback) and the fake model server; both fakes
run in threads of this process, the same for both paths. Each iteration uses a
fresh session (Discord: a new user, `session = "per-user"`; HTTP: a new session
name), so every message finds an idle agent. The two paths alternate, one
warm-up of each first. The HTTP path and the model server's stamps are
bench/chat_latency.py's.

* chat → model: from the fake Discord dispatching MESSAGE_CREATE on the open
  Gateway connection to the model server's `received_at` of the request; next
  to the HTTP API path, from just before `POST /api/messages` to `received_at`.
* reply → platform: from the model server writing the stream's last event
  ([DONE]) to the fake Discord receiving `POST /channels/{id}/messages`; next
  to the HTTP API path, from [DONE] to the `reply` item on the session's SSE
  stream.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

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
from tests.daemon_harness import daemon_settings, harness
from tests.fakes.discord_api import FakeDiscord, bot_config

FIRST_USER = 80_351_110_224_670_000
HANDED_TO_CLIENT: list[float] = []  # when DiscordClient.send_text was called, in order


def stamp_client() -> None:
    """Split reply → platform: until the channel's client, then the REST call."""
    from wakeful.channels.discord.client import DiscordClient

    send_text = DiscordClient.send_text

    async def stamped(self: DiscordClient, address: str, text: str, *, ref: str = "") -> None:
        HANDED_TO_CLIENT.append(time.monotonic())
        await send_text(self, address, text, ref=ref)

    DiscordClient.send_text = stamped  # type: ignore[method-assign]


async def discord_iteration(
    model: StampedModelServer, discord: FakeDiscord, i: int
) -> tuple[float, float, float]:
    index, sent_before = len(model.requests), len(discord.sent)
    said = time.monotonic()
    discord.user_says(str(FIRST_USER + i), f"hello #{i}")
    request = (await model.await_requests(index + 1))[index]
    finished = await model.await_finished(index)
    sent = (await discord.await_sent(sent_before + 1))[sent_before]
    handed = HANDED_TO_CLIENT[sent_before]
    return request.received_at - said, sent.received_at - finished, handed - finished


async def main(n: int) -> None:
    quiet_daemon_logs()
    stamp_client()
    keys = ("dc_in", "dc_out", "dc_handed", "http_in", "http_out")
    samples: dict[str, list[float]] = {key: [] for key in keys}
    with (
        tempfile.TemporaryDirectory() as tmp,
        StampedModelServer() as model,
        FakeDiscord() as discord,
    ):
        users = [str(FIRST_USER + i) for i in range(n + 1)]
        bot = bot_config(discord, Path(tmp), allowed_user_ids=users, session="per-user")
        settings = daemon_settings(Path(tmp) / "data", model.base_url, chat={"discord": [bot]})
        async with harness(settings) as h:
            await discord.until(discord.connected, what="the bot's Gateway session")
            for i in range(n + 1):  # the first of each is an unmeasured warm-up
                measured = await discord_iteration(model, discord, i)
                measured += await http_iteration(h, model, i)
                if i:
                    for key, value in zip(keys, measured, strict=True):
                        samples[key].append(value)
        report(samples)
        assert model.violations == [], model.violations


def report(samples: dict[str, list[float]]) -> None:
    print_table(
        LATENCY_HEADER,
        [
            ms_row("HTTP: POST /api/messages → model request", samples["http_in"]),
            ms_row("Discord: MESSAGE_CREATE dispatched → model request", samples["dc_in"]),
            ms_row("HTTP: model [DONE] → SSE reply", samples["http_out"]),
            ms_row("Discord: model [DONE] → POST messages received", samples["dc_out"]),
            ms_row("  of which [DONE] → DiscordClient.send_text", samples["dc_handed"]),
        ],
    )
    print_ratios("chat", samples["dc_in"], samples["http_in"])
    p99 = percentile(samples["dc_out"], 99) * 1000
    print(f"reply → Discord p99: {p99:.2f} ms after the model finished")


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=100)
    run_like_the_daemon(main, parser.parse_args().n)
