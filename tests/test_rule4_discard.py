"""Rule 4 is enforced where it is named: a discarded model step is emptied
and can never be recorded, against a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support import opened_store
from wakeful.core.provider import ModelResponse, Usage
from wakeful.core.trajectory.rules import PartialOutputDiscarded, TrajectoryWriter

pytestmark = pytest.mark.anyio


def response(text: str) -> ModelResponse:
    return ModelResponse(text, (), "stop", Usage(), "fake-model", 0.1)


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[TrajectoryWriter]:
    async with opened_store(tmp_path) as store:
        yield TrajectoryWriter(store, "main")


async def test_discarded_step_is_emptied_and_cannot_be_recorded(
    writer: TrajectoryWriter,
) -> None:
    step = writer.begin_model_step()
    step.append("HALF-")
    step.append("WRITTEN")
    assert step.text() == "HALF-WRITTEN"
    writer.discard_partial_output(step, "the user said stop")
    assert step.discarded and step.text() == ""
    with pytest.raises(PartialOutputDiscarded):
        step.append("more")
    with pytest.raises(PartialOutputDiscarded):
        await writer.record_assistant_message(response("HALF-WRITTEN"))
    assert await writer.store.trajectory("main") == []


async def test_the_next_step_records_normally(writer: TrajectoryWriter) -> None:
    writer.discard_partial_output(writer.begin_model_step(), "an interrupt")
    step = writer.begin_model_step()
    step.append("Whole answer.")
    await writer.record_assistant_message(response("Whole answer."))
    stored = await writer.store.trajectory("main")
    assert stored == [{"role": "assistant", "content": "Whole answer."}]
