"""Chat platform latency: a Telegram message → the model, and the model's end → Telegram.

The daemon runs in-process (tests/daemon_harness.py) with one `[[chat.telegram]]`
bot in polling mode against the fake Bot API (tests/fakes/telegram_api.py),
and the fake model server; both fakes run in threads of this process, the
same for both paths. Each iteration uses a fresh session (Telegram: a new
user, `session = "per-user"`; HTTP: a new session name), so every message
finds an idle agent. The two paths alternate, one warm-up of each first.

* chat → model: from the fake Telegram queuing the update (what a long poll
  wakes on) to the model server's `received_at` of the request; next to the
  HTTP API path, from just before `POST /api/messages` to `received_at`.
* reply → platform: from the model server writing the stream's last event
  ([DONE]) to the fake Telegram receiving `sendMessage`; next to the HTTP API
  path, from [DONE] to the `reply` item arriving on the session's SSE stream
  (`GET /api/sessions/{s}/stream`, opened before the message is sent).
* webhook ack: a second daemon in webhook mode; `POST /chat/telegram/tg/webhook`
  with the secret header → 200, which comes once the event is committed (so
  a crash after the 200 loses nothing); next to `GET /healthz` on that daemon.

Targets (issue 11): chat → model within 2× the HTTP path; reply → platform
within 10 ms p99 of the model finishing.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

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
from tests.daemon_process import free_port
from tests.fakes.model_server import FakeModelServer, RecordedRequest, Reply
from tests.fakes.telegram_api import FakeTelegramApi, bot_config
from wakeful.channels.telegram.client import TelegramClient
from wakeful.core.outbox.service import Outbox
from wakeful.store.outbox.record import OutgoingMessage

FIRST_USER = 10_000
HANDED_TO_CLIENT: list[float] = []  # when TelegramClient.send_text was called, in order
OUTBOX_SENDS: dict[str, float] = {}  # session → when the session loop called Outbox.send


def stamp_calls() -> None:
    """Split reply → platform: the session loop until Outbox.send, the outbox until the
    channel's client, the Bot API call."""
    send_text, outbox_send = TelegramClient.send_text, Outbox.send

    async def stamped_send_text(
        self: TelegramClient, address: str, text: str, *, ref: str = ""
    ) -> None:
        HANDED_TO_CLIENT.append(time.monotonic())
        await send_text(self, address, text, ref=ref)

    async def stamped_outbox_send(
        self: Outbox, session: str, text: str, **kwargs: Any
    ) -> OutgoingMessage:
        OUTBOX_SENDS.setdefault(session, time.monotonic())
        return await outbox_send(self, session, text, **kwargs)

    TelegramClient.send_text = stamped_send_text  # type: ignore[method-assign]
    Outbox.send = stamped_outbox_send  # type: ignore[method-assign]


REPLY = "Here is the answer, in a few tokens as a model would stream it."


class StampedModelServer(FakeModelServer):
    """The fake model server, also noting when each stream's last event went out."""

    def __init__(self) -> None:
        super().__init__()
        self.finished_at: dict[int, float] = {}
        self.responder = lambda _body: Reply(text=REPLY)

    def _finish(self, record: RecordedRequest, *, aborted: bool) -> None:
        if not aborted:
            self.finished_at.setdefault(record.index, time.monotonic())
        super()._finish(record, aborted=aborted)

    async def await_finished(self, index: int) -> float:
        await self.await_completion(index)
        return self.finished_at[index]


async def telegram_iteration(
    model: StampedModelServer, telegram: FakeTelegramApi, i: int
) -> tuple[float, float, float, float]:
    index, sent_before = len(model.requests), len(telegram.sent)
    queued = time.monotonic()
    telegram.user_says(FIRST_USER + i, f"hello #{i}")
    request = (await model.await_requests(index + 1))[index]
    finished = await model.await_finished(index)
    sent = (await telegram.await_sent(sent_before + 1))[sent_before]
    handed = HANDED_TO_CLIENT[sent_before]
    outbox = OUTBOX_SENDS[f"telegram:tg:{FIRST_USER + i}"]
    in_, out = request.received_at - queued, sent.received_at - finished
    return in_, out, outbox - finished, handed - finished


async def http_iteration(h: Harness, model: StampedModelServer, i: int) -> tuple[float, float]:
    session = f"bench-http-{i}"
    index = len(model.requests)
    async with sse_replies(h, session) as replies:
        posted = time.monotonic()
        await h.send(f"hello #{i}", session=session)
        request = (await model.await_requests(index + 1))[index]
        arrived = await replies.receive()
    finished = await model.await_finished(index)
    return request.received_at - posted, arrived - finished


@asynccontextmanager
async def sse_replies(h: Harness, session: str) -> AsyncIterator[Any]:
    """The session's SSE stream, open and live; yields a stream of `reply` arrival times."""
    send, receive = anyio.create_memory_object_stream[float](8)
    ready = anyio.Event()

    async def read(response: httpx.Response) -> None:
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith(": ready"):
                ready.set()
            elif line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind == "reply":
                stamp = time.monotonic()
                json.loads(line.removeprefix("data: "))
                await send.send(stamp)

    async with (
        h.client.stream("GET", f"/api/sessions/{session}/stream", timeout=None) as response,
        anyio.create_task_group() as group,
    ):
        group.start_soon(read, response)
        await ready.wait()
        yield receive
        group.cancel_scope.cancel()


async def webhook_acks(
    directory: Path, model: StampedModelServer, telegram: FakeTelegramApi, n: int
) -> tuple[list[float], list[float]]:
    """Webhook mode: POST of an Update (secret checked, event committed) → 200; next to
    GET /healthz on the same daemon. One at a time, each answered before the next."""
    port = free_port()
    users = list(range(FIRST_USER, FIRST_USER + n + 1))
    telegram.known_chats.update(users)
    public_url = f"http://127.0.0.1:{port}"
    bot = bot_config(
        telegram, directory, allowed_user_ids=users, session="per-user", mode="webhook",
        public_url=public_url,
    )  # fmt: skip
    data = directory / "webhook-data"
    server = {"bind": f"127.0.0.1:{port}"}
    settings = daemon_settings(data, model.base_url, chat={"telegram": [bot]}, server=server)
    secret = (directory / "telegram-secret").read_text().strip()
    acks, baseline = [], []
    async with harness(settings) as h, httpx.AsyncClient(base_url=h.running.url) as client:
        await telegram.until(lambda: telegram.webhook is not None)
        for i in range(n + 1):
            update = webhook_update(9_000_000 + i, FIRST_USER + i)
            sent_before = len(telegram.sent)
            started = time.monotonic()
            answer = await client.post(
                bot_path(bot), json=update, headers={"X-Telegram-Bot-Api-Secret-Token": secret}
            )
            acked = time.monotonic()
            assert answer.status_code == 200, answer.text
            started_health = time.monotonic()
            await client.get("/healthz")
            if i:
                acks.append(acked - started)
                baseline.append(time.monotonic() - started_health)
            await telegram.await_sent(sent_before + 1)
    return acks, baseline


def bot_path(bot: dict[str, Any]) -> str:
    return f"/chat/telegram/{bot['name']}/webhook"


def webhook_update(update_id: int, user: int) -> dict[str, Any]:
    sender = {"id": user, "is_bot": False, "first_name": "Bench"}
    message = {"message_id": update_id, "from": sender, "chat": {"id": user, "type": "private"},
               "date": int(time.time()), "text": f"webhook #{update_id}"}  # fmt: skip
    return {"update_id": update_id, "message": message}


async def main(n: int) -> None:
    quiet_daemon_logs()
    stamp_calls()
    keys = ("tg_in", "tg_out", "tg_outbox", "tg_handed", "http_in", "http_out")
    samples: dict[str, list[float]] = {key: [] for key in keys}
    with (
        tempfile.TemporaryDirectory() as tmp,
        StampedModelServer() as model,
        FakeTelegramApi() as tg,
    ):
        users = list(range(FIRST_USER, FIRST_USER + n + 1))
        bot = bot_config(tg, Path(tmp), allowed_user_ids=users, session="per-user")
        settings = daemon_settings(Path(tmp) / "data", model.base_url, chat={"telegram": [bot]})
        async with harness(settings) as h:
            await tg.until(lambda: len(tg.get_updates_offsets) >= 1)  # the bot is polling
            for i in range(n + 1):  # the first of each is an unmeasured warm-up
                measured = await telegram_iteration(model, tg, i)
                measured += await http_iteration(h, model, i)
                if i:
                    for key, value in zip(keys, measured, strict=True):
                        samples[key].append(value)
            report(samples)
        acks, baseline = await webhook_acks(Path(tmp), model, tg, n)
        print()
        print_table(
            LATENCY_HEADER,
            [
                ms_row("GET /healthz (same daemon, baseline)", baseline),
                ms_row("Telegram webhook: POST Update → 200 (committed)", acks),
            ],
        )
        assert model.violations == [], model.violations


def report(samples: dict[str, list[float]]) -> None:
    print_table(
        LATENCY_HEADER,
        [
            ms_row("HTTP: POST /api/messages → model request", samples["http_in"]),
            ms_row("Telegram: update queued → model request", samples["tg_in"]),
            ms_row("HTTP: model [DONE] → SSE reply", samples["http_out"]),
            ms_row("Telegram: model [DONE] → sendMessage received", samples["tg_out"]),
            ms_row("  of which [DONE] → Outbox.send called", samples["tg_outbox"]),
            ms_row("  of which [DONE] → TelegramClient.send_text", samples["tg_handed"]),
        ],
    )
    print_ratios("chat", samples["tg_in"], samples["http_in"], " (target ≤ 2×)")
    p99 = percentile(samples["tg_out"], 99) * 1000
    print(f"reply → Telegram p99: {p99:.2f} ms after the model finished (target ≤ 10 ms)")
    client = [o - h for o, h in zip(samples["tg_out"], samples["tg_handed"], strict=True)]
    call_p99 = percentile(client, 99) * 1000
    print(f"the Bot API call itself (send_text → received), p99: {call_p99:.2f} ms")


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=100)
    run_like_the_daemon(main, parser.parse_args().n)
