"""WhatsApp latency: a webhook notification → the model, and the model's end → WhatsApp.

The daemon runs in-process (tests/daemon_harness.py) with one `[[chat.whatsapp]]`
number against the fake Graph API (tests/fakes/whatsapp_api.py) and the fake
model server; both fakes run in threads of this process, the same for both
paths. Each iteration uses a fresh session (WhatsApp: a new allowed user,
`session = "per-user"`; HTTP: a new session name), so every message finds an
idle agent. The two paths alternate, one warm-up of each first.

* chat → model: from just before the signed `POST /chat/whatsapp/<name>/webhook`
  to the model server's `received_at` of the request; next to the HTTP API
  path, from just before `POST /api/messages` to `received_at`.
* webhook ack: the same POST → its 200, which comes once the event is
  committed (so a crash after the 200 loses nothing).
* reply → platform: from the model server writing the stream's last event
  ([DONE]) to the fake Graph API receiving the `/messages` send; next to the
  HTTP API path, from [DONE] to the `reply` item on the session's SSE stream.

The helpers (the stamped model server, the HTTP path, the table) are
bench/chat_latency.py's.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio
import httpx

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
from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.whatsapp_api import FakeGraphApi, WebhookSender, notification, text_message
from tests.test_whatsapp_channel import whatsapp_entry


def user(i: int) -> str:
    return f"4477009{i:05d}"


async def whatsapp_iteration(
    model: StampedModelServer,
    api: FakeGraphApi,
    sender: WebhookSender,
    http: httpx.AsyncClient,
    i: int,
) -> tuple[float, float, float]:
    index, sent_before = len(model.requests), len(api.sent)
    document = notification(text_message(f"hello #{i}", sender=user(i)))
    posted = time.monotonic()
    answer = await sender.adeliver(http, document)
    acked = time.monotonic()
    assert answer.status_code == 200, answer.text
    request = (await model.await_requests(index + 1))[index]
    finished = await model.await_finished(index)
    sent = (await api.await_sent(sent_before + 1))[sent_before]
    return request.received_at - posted, acked - posted, sent.received_at - finished


async def main(n: int) -> None:
    quiet_daemon_logs()
    keys = ("wa_in", "wa_ack", "wa_out", "http_in", "http_out")
    samples: dict[str, list[float]] = {key: [] for key in keys}
    with (
        tempfile.TemporaryDirectory() as tmp,
        StampedModelServer() as model,
        FakeGraphApi() as api,
    ):
        users = [user(i) for i in range(n + 1)]
        entry = whatsapp_entry(Path(tmp), api.api_base, session="per-user", allowed_user_ids=users)
        settings = daemon_settings(Path(tmp) / "data", model.base_url, chat={"whatsapp": [entry]})
        async with harness(settings) as h, httpx.AsyncClient() as http:
            sender = WebhookSender(f"{h.running.url}/chat/whatsapp/{entry['name']}/webhook", api)
            await ready(h)
            for i in range(n + 1):  # the first of each is an unmeasured warm-up
                measured = await whatsapp_iteration(model, api, sender, http, i)
                measured += await http_iteration(h, model, i)
                if i:
                    for key, value in zip(keys, measured, strict=True):
                        samples[key].append(value)
        assert model.violations == [], model.violations
    report(samples)


async def ready(h: Harness) -> None:
    """Until the number's credentials were checked (its health says "ready")."""
    with anyio.fail_after(10):
        while True:
            health = (await h.client.get("/api/status")).json()["components"]
            if health["chat.whatsapp:biz"]["ok"]:
                return
            await anyio.sleep(0.02)  # health has no change feed over HTTP to await


def report(samples: dict[str, list[float]]) -> None:
    print_table(
        LATENCY_HEADER,
        [
            ms_row("HTTP: POST /api/messages → model request", samples["http_in"]),
            ms_row("WhatsApp: webhook POST → model request", samples["wa_in"]),
            ms_row("WhatsApp: webhook POST → 200 (committed)", samples["wa_ack"]),
            ms_row("HTTP: model [DONE] → SSE reply", samples["http_out"]),
            ms_row("WhatsApp: model [DONE] → /messages received", samples["wa_out"]),
        ],
    )
    print_ratios("chat", samples["wa_in"], samples["http_in"])


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=100)
    run_like_the_daemon(main, parser.parse_args().n)
