"""The memory component: the three tools, the digest section of the system prompt,
and the owner's review (GET /api/memory, /api/memory/{id}, POST …/approve, …/forget:
``wakeful memory list | show | approve | forget``)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import anyio
from anyio.abc import TaskStatus
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from wakeful.core.components.context import ComponentSetup
from wakeful.kernel.config_base import ConfigError
from wakeful.kernel.http.errors import ApiError
from wakeful.memory.book import EntryNotFound, MemoryBook
from wakeful.memory.entries import EntryLog, EntryStatus
from wakeful.memory.files import MemoryFiles
from wakeful.memory.search import MemorySearch
from wakeful.memory.tools import MemoryGet, MemorySearchTool, Remember

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings
    from wakeful.memory.embeddings import Meaning

INDEX_FILE = "memory-index.sqlite"  # under data_dir: derived, rebuilt when deleted


def _meaning(setup: ComponentSetup) -> Meaning | None:
    """The embeddings ranker when [memory] embeddings_model is set (numpy imported then)."""
    section, llm = setup.settings.memory, setup.settings.llm
    if not section.embeddings_model:
        return None
    try:
        from wakeful.memory.embeddings import Embedder, Meaning
    except ImportError:
        raise ConfigError(
            "memory.embeddings_model: ranking by meaning needs numpy: "
            "pip install 'wakeful[embeddings]'"
        ) from None
    base_url = section.embeddings_base_url or llm.base_url
    embedder = Embedder(base_url, section.embeddings_model, llm.resolve_api_key(), 30.0)
    setup.resources.push_async_callback(embedder.aclose)
    return Meaning(embedder, section.embeddings_per_search)


class MemoryComponent:
    name = "memory"

    def __init__(self) -> None:
        self.book: MemoryBook | None = None

    async def configure(self, setup: ComponentSetup) -> None:
        section = setup.settings.memory
        files = MemoryFiles(section.folder(setup.data_dir))
        book = self.book = MemoryBook(files, EntryLog(setup.state), ZoneInfo(section.timezone))
        search = MemorySearch(
            setup.store, files, setup.data_dir / INDEX_FILE, meaning=_meaning(setup)
        )
        setup.resources.callback(search.close)
        setup.add_tool(Remember(book))
        setup.add_tool(MemorySearchTool(search))
        setup.add_tool(MemoryGet(book))
        digest_chars = section.digest_chars
        setup.add_prompt_section(lambda: book.digest(digest_chars), digest_chars)
        setup.add_admin_route(Route("/api/memory", self._list, methods=["GET"]))
        setup.add_admin_route(Route("/api/memory/{entry}", self._show, methods=["GET"]))
        setup.add_admin_route(
            Route("/api/memory/{entry}/{action:str}", self._decide, methods=["POST"])
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # nothing runs in the background: each call does its work

    def _book(self) -> MemoryBook:
        if self.book is None:
            raise RuntimeError("the memory component was not configured")
        return self.book

    async def _list(self, request: Request) -> JSONResponse:
        book = self._book()
        entries = [e.public() for e in await book.entries.all()]
        waiting = sum(e["status"] == EntryStatus.REVIEW for e in entries)
        return JSONResponse(
            {
                "folder": str(book.files.root),
                "files": book.files.names(),
                "review": waiting,
                "entries": entries,
            }
        )

    async def _show(self, request: Request) -> JSONResponse:
        try:
            entry = await self._book().get(request.path_params["entry"])
        except EntryNotFound as exc:
            raise ApiError(404, str(exc)) from None
        return JSONResponse(entry.public())

    async def _decide(self, request: Request) -> JSONResponse:
        book, action = self._book(), request.path_params["action"]
        decide = {"approve": book.approve, "forget": book.forget}.get(action)
        if decide is None:
            raise ApiError(404, f"no action {action!r}: approve or forget")
        try:
            entry = await decide(request.path_params["entry"])
        except EntryNotFound as exc:
            raise ApiError(404, str(exc)) from None
        return JSONResponse(entry.public())

    async def reload(self, settings: Settings) -> list[str]:
        return []  # a changed [memory] takes effect at the next start
