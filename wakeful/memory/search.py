"""memory_search's engine: bring the index up to date with the files and every
session's trajectory, then ask it. One search at a time (one SQLite connection).

By words (BM25) always; by meaning as well when ``[memory] embeddings_model`` is set
(:mod:`wakeful.memory.embeddings`, imported only then), the two rankings fused."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from wakeful.memory.files import MemoryFiles
from wakeful.memory.index import Hit, SearchIndex
from wakeful.store.base import Store

if TYPE_CHECKING:
    from wakeful.memory.embeddings import Meaning

log = structlog.get_logger(__name__)
CANDIDATES = 32  # at least this many from each ranking go into the fusion


@dataclass(frozen=True)
class Found:
    hits: list[Hit]
    # Said with the results when they are not what was asked for (meaning unavailable).
    notes: list[str] = field(default_factory=list)


class MemorySearch:
    def __init__(
        self, store: Store, files: MemoryFiles, index_path: Path, meaning: Meaning | None = None
    ) -> None:
        self._store = store
        self.index = SearchIndex(index_path, files)
        self.meaning = meaning
        if meaning is not None:
            self.index.use_embeddings_model(meaning.embedder.model)
        self._lock = anyio.Lock()

    async def search(self, query: str, limit: int = 8) -> Found:
        async with self._lock:
            await anyio.to_thread.run_sync(self.index.sync_files)
            for session in await self._store.sessions():
                messages = await self._store.trajectory(session)
                await anyio.to_thread.run_sync(self.index.sync_session, session, messages)
            k = max(limit * 4, CANDIDATES)
            ranked = await anyio.to_thread.run_sync(self.index.ranked, query, k)
            notes: list[str] = []
            if self.meaning is not None:
                from wakeful.memory.embeddings import EmbeddingsFailed

                try:
                    ranked = await self.meaning.rank(self.index, query, ranked, k)
                except EmbeddingsFailed as exc:
                    log.warning("memory search by meaning failed; by words only", error=str(exc))
                    notes.append(f"ranked by words only: the embeddings endpoint failed ({exc})")
            hits = await anyio.to_thread.run_sync(self.index.hits, ranked[:limit])
            return Found(hits, notes)

    def close(self) -> None:
        self.index.close()
