"""Meaning, next to words: vectors from an OpenAI-compatible ``/embeddings`` endpoint.

Optional (``[memory] embeddings_model``). Each passage of the index gets one vector,
computed the first time a search finds it without one (a bounded number per search, so
the first search over a long history is not held up: words rank everything meanwhile).
A search ranks by BM25 and by cosine similarity to the query's vector, and fuses the
two rankings (reciprocal rank fusion: a passage high in either list comes high; the
two scores' scales never have to be compared). When the endpoint fails, the search
ranks by words alone and says so: memory never fails because of a second service.

numpy is the wakeful[embeddings] extra, imported only when this module is, which is
only when a model is configured.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import httpx
import numpy as np
import numpy.typing as npt

from wakeful.memory.index import SearchIndex

Vector = npt.NDArray[np.float32]
RRF_K = 60  # the usual constant of reciprocal rank fusion: damps the top ranks' weight
BATCH = 64  # passages per /embeddings request


class EmbeddingsFailed(Exception):
    """The endpoint did not give vectors; the message says why, without the key."""


class Embedder:
    """POST {base_url}/embeddings with the model's name; vectors come back normalised."""

    def __init__(self, base_url: str, model: str, api_key: str | None, timeout_s: float) -> None:
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = []
        for start in range(0, len(texts), BATCH):
            vectors += await self._batch(list(texts[start : start + BATCH]))
        return vectors

    async def _batch(self, texts: list[str]) -> list[Vector]:
        try:
            response = await self._http.post(
                "/embeddings", json={"model": self.model, "input": texts}
            )
        except httpx.HTTPError as exc:
            raise EmbeddingsFailed(f"{type(exc).__name__} reaching the endpoint") from None
        if response.status_code != 200:
            raise EmbeddingsFailed(f"the endpoint answered {response.status_code}")
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [normalised(item["embedding"]) for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingsFailed(f"an answer not shaped like /embeddings' ({exc})") from None
        if len(vectors) != len(texts):
            raise EmbeddingsFailed(f"{len(vectors)} vectors for {len(texts)} texts")
        return vectors


def normalised(values: Sequence[float]) -> Vector:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def to_blob(vector: Vector) -> bytes:
    return vector.astype(np.float32).tobytes()


def from_blob(blob: bytes) -> Vector:
    return np.frombuffer(blob, dtype=np.float32)


def nearest(query: Vector, ids: Sequence[int], matrix: Vector, limit: int) -> list[int]:
    """The ids of the ``limit`` rows most similar to ``query`` (rows are normalised:
    the dot product is the cosine), best first; rows of another dimension never match."""
    if not len(ids) or matrix.ndim != 2 or matrix.shape[1] != query.shape[0]:
        return []
    scores = matrix @ query
    top = np.argsort(-scores)[:limit]
    return [ids[int(i)] for i in top]


def fuse(*rankings: Sequence[int]) -> list[int]:
    """Reciprocal rank fusion of ranked id lists, best first (ties: first seen first)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda item: -scores[item])


class Meaning:
    """The index's passages by meaning: embeds what has no vector yet (at most
    ``per_search`` passages a search), keeps the matrix of vectors in memory, and ranks."""

    def __init__(self, embedder: Embedder, per_search: int = 256) -> None:
        self.embedder = embedder
        self.per_search = per_search
        self._ids: list[int] = []
        self._matrix: Vector = np.zeros((0, 0), dtype=np.float32)

    async def rank(self, index: SearchIndex, query: str, words: Sequence[int], k: int) -> list[int]:
        """``words`` (the BM25 ranking) fused with the ranking by meaning; raises
        EmbeddingsFailed (the caller falls back to ``words``)."""
        missing = await anyio.to_thread.run_sync(index.unembedded, self.per_search)
        added: list[Vector] = []
        if missing:
            added = await self.embedder.embed([text for _, text in missing])
            rows = [(rowid, to_blob(v)) for (rowid, _), v in zip(missing, added, strict=True)]
            await anyio.to_thread.run_sync(index.add_vectors, rows)
        [asked] = await self.embedder.embed([query])
        same_shape = all(v.shape == asked.shape for v in added)
        if index.vectors_dropped or not same_shape or self._matrix.shape[1:] != asked.shape:
            # Read once (at the first search, after a file changed or a model switch);
            # otherwise what this search embedded is appended, not every vector read again.
            stored = await anyio.to_thread.run_sync(index.all_vectors)
            self._ids = [rowid for rowid, _ in stored]
            blobs = [from_blob(blob) for _, blob in stored]
            dims = {len(v) for v in blobs}
            self._matrix = np.vstack(blobs) if len(dims) == 1 else np.zeros((0, 0), np.float32)
        elif added:
            self._ids += [rowid for rowid, _ in missing]
            self._matrix = np.vstack([self._matrix, *added])
        return fuse(words, nearest(asked, self._ids, self._matrix, k))
