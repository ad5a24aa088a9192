"""A process that claims one outgoing message and blocks inside the channel's deliver.

Run as ``python -m tests.outbox_blocking_child sqlite PATH`` or ``... redis PREFIX``;
prints ``blocked <id>`` once the message is committed ``sending`` and the channel
holds it, then waits forever, so the parent's SIGKILL lands in that window.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from tests.redis_server import REDIS_URL
from wakeful.core.outbox.channels import Receipt
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.factory import open_outbox
from wakeful.store.base import Store
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore


class BlockingChannel:
    name = "chat:web"
    resend_safe = False

    def __init__(self) -> None:
        self.release = anyio.Event()  # never set: the parent kills us first

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        print(f"blocked {message.id}", flush=True)
        await self.release.wait()
        return Receipt(self.name, "delivered")


async def main(backend: str, where: str) -> None:
    store: Store
    if backend == "sqlite":
        store = await SqliteStore(Path(where)).open()
    else:
        store = await RedisStore(REDIS_URL, prefix=where).open()
    outbox = await open_outbox(store)
    message = await outbox.add(NewMessage("main", "chat:web", "the build is green", "k:1"))
    await Deliverer(outbox, [BlockingChannel()]).deliver(message)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
