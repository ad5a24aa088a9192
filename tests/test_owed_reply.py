"""A reply the trajectory has but the outbox never got (the daemon died in between) is sent
at the next start, once: the 20-kill Matrix test found this window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.matrix_daemon import wait_until
from wakeful.daemon.store.sqlite import SqliteStore

OUTBOX = "/api/sessions/main/outbox"


async def _die_after_recording_the_reply(data_dir: Path) -> None:
    """What a SIGKILL right after ``record_assistant_message`` leaves on disk."""
    store = await SqliteStore(data_dir / "wakeful.db").open()
    try:
        await store.append_messages("main", [{"role": "user", "content": "are you there?"}])
        await store.append_messages("main", [{"role": "assistant", "content": "I am here."}])
    finally:
        await store.aclose()


def test_the_owed_reply_is_sent_at_start_and_only_once(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path, None, port)
    anyio.run(_die_after_recording_the_reply, tmp_path)
    for _ in range(2):  # the second start finds it in the outbox: nothing new
        with DaemonProcess(config, port) as daemon:
            with daemon.client() as client:

                def outbox(client: httpx.Client = client) -> list[dict[str, Any]]:
                    messages: list[dict[str, Any]] = client.get(OUTBOX).json()["messages"]
                    return messages

                sent = wait_until(outbox, "the owed reply in the outbox")
            assert daemon.stop() == 0
        assert [(m["text"], m["key"]) for m in sent] == [("I am here.", "main:reply:at:1")]
