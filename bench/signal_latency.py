"""Signal latency: a Signal message → the model, and the model's end → signal-cli's `send`.

The daemon runs in-process (tests/daemon_harness.py) with one `[[chat.signal]]`
account on its defaults against the fake signal-cli daemon (tests/fakes/signal_cli.py:
SSE events in, JSON-RPC out, over loopback HTTP) and the fake model server; both
fakes run in threads of this process, the same for both paths. Each iteration is a
new person (`session = "per-user"`), so every message finds an idle agent; the HTTP
API path (bench/chat_latency.py's, imported) alternates with it, one warm-up of each.

* chat → model: from the fake daemon adding the envelope as an event (what its SSE
  stream wakes on) to the model server's `received_at`; next to `POST /api/messages`
  → `received_at`.
* reply → platform: from the model server writing [DONE] to the fake daemon
  receiving the `send` call; next to [DONE] → the `reply` item on the session's SSE
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
    print_ratios,
    print_table,
    quiet_daemon_logs,
    run_like_the_daemon,
)
from tests.daemon_harness import daemon_settings, harness
from tests.fakes.signal_cli import FakeSignalCli, Person


def person(i: int) -> Person:
    return Person(f"+1555{i:07d}", f"00000000-0000-4000-8000-{i:012d}", f"Bench {i}")


async def signal_iteration(
    model: StampedModelServer, signal: FakeSignalCli, i: int
) -> tuple[float, float]:
    index, sent_before = len(model.requests), len(signal.sent)
    said = time.monotonic()
    signal.user_says(person(i), f"hello #{i}")
    request = (await model.await_requests(index + 1))[index]
    finished = await model.await_finished(index)
    sent = (await signal.await_sent(sent_before + 1))[sent_before]
    return request.received_at - said, sent.received_at - finished


async def main(n: int) -> None:
    quiet_daemon_logs()
    keys = ("signal_in", "signal_out", "http_in", "http_out")
    samples: dict[str, list[float]] = {key: [] for key in keys}
    with (
        tempfile.TemporaryDirectory() as tmp,
        StampedModelServer() as model,
        FakeSignalCli() as signal,
    ):
        account = {
            "name": "phone",
            "url": signal.base_url,
            "allowed_users": [person(i).number for i in range(n + 1)],
            "session": "per-user",
        }
        settings = daemon_settings(Path(tmp) / "data", model.base_url, chat={"signal": [account]})
        async with harness(settings) as h:
            await signal.until(lambda: signal.open_streams > 0)  # the event stream is open
            for i in range(n + 1):  # the first of each is an unmeasured warm-up
                measured = await signal_iteration(model, signal, i)
                measured += await http_iteration(h, model, i)
                if i:
                    for key, value in zip(keys, measured, strict=True):
                        samples[key].append(value)
        assert model.violations == [], model.violations
    print_table(
        LATENCY_HEADER,
        [
            ms_row("HTTP: POST /api/messages → model request", samples["http_in"]),
            ms_row("Signal: event added → model request", samples["signal_in"]),
            ms_row("HTTP: model [DONE] → SSE reply", samples["http_out"]),
            ms_row("Signal: model [DONE] → send received", samples["signal_out"]),
        ],
    )
    print_ratios("Signal", samples["signal_in"], samples["http_in"])


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=100)
    run_like_the_daemon(main, parser.parse_args().n)
