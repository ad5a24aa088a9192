"""A reply the trajectory has but the outbox never got (the daemon died in between) is sent
at the next start, once: the 20-kill Matrix test found this window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_replies import text_reply
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import wait_until
from wakeful.store.sqlite import SqliteStore

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


async def _replied_as_an_older_daemon_did(data_dir: Path) -> None:
    """The trajectory and the outbox as a daemon before position keys left them."""
    from wakeful.store.outbox.record import NewMessage
    from wakeful.store.outbox.sqlite import SqliteOutbox

    store = await SqliteStore(data_dir / "wakeful.db").open()
    try:
        await store.append_messages("main", [{"role": "user", "content": "are you there?"}])
        await store.append_messages("main", [{"role": "assistant", "content": "I am here."}])
        outbox = await SqliteOutbox(store).open()
        await outbox.add(NewMessage("main", "chat:web", "I am here.", "main:reply:run1:1"))
    finally:
        await store.aclose()


def test_an_upgrade_does_not_send_the_last_reply_again(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A reply an older daemon sent under its run-based key is not owed: the next
    message's answer is the only new one (the loop checks owed replies first)."""
    model_server.push(text_reply("still here"))
    port = free_port()
    config = write_config(tmp_path, model_server.base_url, port)
    anyio.run(_replied_as_an_older_daemon_did, tmp_path)
    with DaemonProcess(config, port) as daemon:
        with daemon.client() as client:
            posted = client.post("/api/messages", json={"session": "main", "text": "hello?"})
            assert posted.status_code == 202

            def outbox(client: httpx.Client = client) -> list[dict[str, Any]]:
                messages: list[dict[str, Any]] = client.get(OUTBOX).json()["messages"]
                return messages if len(messages) >= 2 else []

            sent = wait_until(outbox, "the answer to the new message")
        assert daemon.stop() == 0
    assert [m["text"] for m in sent] == ["I am here.", "still here"]
