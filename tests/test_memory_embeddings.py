"""memory_search by meaning as well as by words ([memory] embeddings_model, issue 24).

Real HTTP to the fake model server's /v1/embeddings (OpenAI's shape), whose vectors put
synonyms together (tests/fakes/model_server.py: concept_vector). The promises: a fact
that shares no word with the question is found by meaning; what words find is still
found (the rankings are fused, not replaced); an endpoint that fails leaves the search
by words, said in the result; the default config sends nothing to any endpoint.

Invariant (hypothesis): the fusion of two rankings holds every id of both exactly
once, and an id first in both rankings is first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_replies import ToolCallSpec
from tests.fakes.model_server import FakeModelServer, Reply
from tests.support import opened_store
from tests.test_memory import book_in, remember
from tests.test_memory_daemon import ask, tool_results
from wakeful.kernel.config_base import ConfigError
from wakeful.memory.embeddings import Embedder, Meaning, fuse
from wakeful.memory.files import MemoryFiles
from wakeful.memory.search import MemorySearch

pytestmark = pytest.mark.anyio
MODEL = "fake-embed"


async def search_with(tmp_path: Path, base_url: str, query: str) -> tuple[list[str], list[str]]:
    """Three facts remembered, then one search by meaning and words; texts and notes."""
    book = book_in(tmp_path / "mem")
    for fact in (
        "The owner drives a red Volvo",
        "The owner's physician is Dr. Lee",
        "The owner prefers tea to coffee",
    ):
        await remember(book, fact)
    embedder = Embedder(base_url, MODEL, None, 10.0)
    async with opened_store(tmp_path) as store:
        search = MemorySearch(
            store, MemoryFiles(tmp_path / "mem"), tmp_path / "index.sqlite", Meaning(embedder)
        )
        try:
            found = await search.search(query, limit=2)
        finally:
            search.close()
            await embedder.aclose()
    return [hit.text for hit in found.hits], found.notes


async def test_a_fact_sharing_no_word_with_the_question_is_found_by_meaning(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    texts, notes = await search_with(tmp_path, model_server.base_url, "which automobile?")
    assert texts[0].startswith("The owner drives a red Volvo"), texts
    assert notes == []
    # Every passage once, then the question: nothing embedded twice.
    assert [len(batch) for batch in model_server.embedded] == [3, 1]


async def test_what_words_find_is_still_found_beside_meaning(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    texts, _ = await search_with(tmp_path, model_server.base_url, "coffee")
    assert texts[0].startswith("The owner prefers tea to coffee"), texts


async def test_a_failing_endpoint_leaves_the_search_by_words_and_says_so(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.embeddings_status = 503
    texts, notes = await search_with(tmp_path, model_server.base_url, "physician")
    assert texts[0].startswith("The owner's physician is Dr. Lee"), texts
    assert notes == [
        "ranked by words only: the embeddings endpoint failed (the endpoint answered 503)"
    ]


async def test_a_changed_memory_file_is_embedded_again_and_never_keeps_an_old_vector(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    book = book_in(tmp_path / "mem")
    await remember(book, "The owner drives a red Volvo")
    embedder = Embedder(model_server.base_url, MODEL, None, 10.0)
    async with opened_store(tmp_path) as store:
        search = MemorySearch(
            store, MemoryFiles(tmp_path / "mem"), tmp_path / "index.sqlite", Meaning(embedder)
        )
        try:
            assert (await search.search("automobile")).hits
            memory_md = tmp_path / "mem" / "MEMORY.md"
            # The owner rewrites the file: the car is gone, a doctor is there instead.
            memory_md.write_text("- The owner's dentist is Dr. Lee\n")
            hits = (await search.search("automobile")).hits
        finally:
            search.close()
            await embedder.aclose()
    assert all("Volvo" not in hit.text for hit in hits)
    assert model_server.embedded[-2] == ["The owner's dentist is Dr. Lee"]


async def test_the_daemon_on_its_defaults_sends_nothing_to_an_embeddings_endpoint(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("memory_search", {"query": "automobile"})]),
        Reply(text="Nothing."),
    )
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        await ask(h, "what do I drive?", "main")
    assert model_server.embedded == []


async def test_a_daemon_with_an_embeddings_model_finds_by_meaning_through_the_tool(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    remembered = {"text": "The owner drives a red Volvo", "reason": "asked"}
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("remember", remembered)]),
        Reply(text="Noted."),
        Reply(tool_calls=[ToolCallSpec("memory_search", {"query": "automobile"})]),
        Reply(text="A Volvo."),
    )
    # Not the default: the setting under test (the sibling above runs the default).
    settings = daemon_settings(tmp_path, model_server.base_url, memory={"embeddings_model": MODEL})
    async with harness(settings) as h:
        await ask(h, "remember that I drive a red Volvo", "main")
        await ask(h, "what do I drive?", "main")
    body: dict[str, Any] = model_server.requests[-1].body
    [result] = tool_results(body)[-1:]
    assert "red Volvo" in result and "ranked by words only" not in result, result
    assert model_server.embedded  # the endpoint was asked


def test_a_missing_numpy_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from wakeful.memory.component import _meaning

    real_import = builtins.__import__

    def no_numpy(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "wakeful.memory.embeddings":
            raise ImportError("No module named 'numpy'")
        return real_import(name, *args, **kwargs)

    class Setup:
        class settings:
            class memory:
                embeddings_model = MODEL

            llm = None

    monkeypatch.setattr(builtins, "__import__", no_numpy)
    with pytest.raises(ConfigError) as raised:
        _meaning(Setup())  # type: ignore[arg-type]
    assert str(raised.value) == (
        "memory.embeddings_model: ranking by meaning needs numpy: pip install 'wakeful[embeddings]'"
    )


rankings = st.lists(st.integers(0, 50), unique=True, max_size=30)


@given(words=rankings, meaning=rankings)
def test_fusion_keeps_every_id_once_and_a_double_first_first(
    words: list[int], meaning: list[int]
) -> None:
    fused = fuse(words, meaning)
    assert sorted(fused) == sorted(set(words) | set(meaning))
    if words and meaning and words[0] == meaning[0]:
        assert fused[0] == words[0]


def test_the_guides_embeddings_config_loads_as_written(tmp_path: Path) -> None:
    from tests.test_documented_commands import ROOT
    from wakeful.app.config import load_settings

    text = (ROOT / "docs" / "memory.md").read_text().split("## Searching by meaning", 1)[1]
    path = tmp_path / "wakeful.toml"
    path.write_text(text.split("```toml\n", 1)[1].split("```", 1)[0])
    memory = load_settings(path).memory
    assert memory.embeddings_model == "text-embedding-3-small"
    assert memory.embeddings_base_url is None and memory.embeddings_per_search == 256
