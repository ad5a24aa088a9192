"""A compaction never passes what the model has not read (issue 21, finding 1).

Events appended after the model's newest answer were carried by no agent
request yet: a boundary past them would put a summary in their place, written
from a transcript that may cut them. The compaction takes only what an
answered request carried; the unread events stay verbatim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import opened_store
from wakeful.core.context.config import ContextSection
from wakeful.core.context.session_context import SessionContext

pytestmark = pytest.mark.anyio


def history(seen: int, unread: int) -> list[dict[str, Any]]:
    """``seen`` answered exchanges, then ``unread`` events (~600 tokens each) no request carried."""
    full: list[dict[str, Any]] = []
    for i in range(seen):
        full.append({"role": "user", "content": f"seen{i:03d} " + "s" * 2400})
        full.append({"role": "assistant", "content": "noted"})
    full += [{"role": "user", "content": f"evt{i:03d} " + "e" * 2400} for i in range(unread)]
    return full


async def test_the_boundary_stays_before_events_no_request_carried(tmp_path: Path) -> None:
    transcripts: list[str] = []

    async def summarize(transcript: str) -> str:
        transcripts.append(transcript)
        return "the earlier exchanges were acknowledged"

    settings = ContextSection()  # the defaults; the window is what makes it compact
    full = history(seen=20, unread=20)
    async with opened_store(tmp_path) as store:
        context = SessionContext(
            "main",
            store,
            settings,
            window=settings.reserve(28_000) + 20_000,  # about 23.5k for the request
            output_dir=tmp_path,
            summarize=summarize,
        )
        sent = await context.fit(full, [])
    assert transcripts, "the history is over the budget: a compaction was due"
    assert "evt" not in "".join(transcripts)
    assert all(message in sent for message in full[40:])  # the unread, verbatim
