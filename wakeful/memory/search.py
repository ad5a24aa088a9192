"""memory_search's engine: bring the index up to date with the files and every
session's trajectory, then ask it. One search at a time (one SQLite connection)."""

from __future__ import annotations

from pathlib import Path

import anyio

from wakeful.memory.files import MemoryFiles
from wakeful.memory.index import Hit, SearchIndex
from wakeful.store.base import Store


class MemorySearch:
    def __init__(self, store: Store, files: MemoryFiles, index_path: Path) -> None:
        self._store = store
        self.index = SearchIndex(index_path, files)
        self._lock = anyio.Lock()

    async def search(self, query: str, limit: int = 8) -> list[Hit]:
        async with self._lock:
            await anyio.to_thread.run_sync(self.index.sync_files)
            for session in await self._store.sessions():
                messages = await self._store.trajectory(session)
                await anyio.to_thread.run_sync(self.index.sync_session, session, messages)
            return await anyio.to_thread.run_sync(self.index.search, query, limit)

    def close(self) -> None:
        self.index.close()
