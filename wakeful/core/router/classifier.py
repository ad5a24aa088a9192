"""The pluggable classifier for messages whose meaning decides their strategy.

A cheap model call with a hard latency budget. Anything but a clean answer
in time — slow, down, unparseable — falls back to queue: interrupting is
only worth it when the classifier is sure and fast.
"""

from __future__ import annotations

import time
from typing import Protocol

import anyio
import structlog

from wakeful.core.provider import ModelProvider, ModelRequest, ProviderError
from wakeful.core.router.decision import Decision
from wakeful.kernel.events import Event

log = structlog.get_logger(__name__)

CLASSIFIER_PROMPT = (
    "You route messages that a user sends to an assistant while it is busy with a task. "
    "Answer with exactly one word:\n"
    "cancel - the user wants the current work stopped or changed right now;\n"
    "parallel - a quick, independent question answerable without the task "
    "(e.g. the time, a unit conversion);\n"
    "queue - anything else: information or instructions for the task, to read when "
    "the current step ends."
)


class Classifier(Protocol):
    async def classify(self, event: Event) -> Decision: ...


class ModelClassifier:
    def __init__(self, provider: ModelProvider, model: str, budget_ms: int) -> None:
        self._provider = provider
        self._model = model
        self._budget_s = budget_ms / 1000

    async def classify(self, event: Event) -> Decision:
        started = time.monotonic()
        answer: str | None = None
        with anyio.move_on_after(self._budget_s):
            try:
                answer = await self._ask(event.content.text)
            except ProviderError as exc:
                return Decision.queue(f"classifier failed ({exc}); queue is the safe default")
        elapsed_ms = (time.monotonic() - started) * 1000
        if answer is None:
            return Decision.queue(
                f"classifier gave no answer within {self._budget_s * 1000:.0f} ms; queued"
            )
        return _decision_from(answer, elapsed_ms)

    async def _ask(self, text: str) -> str:
        response = await self._provider.complete(
            ModelRequest(
                messages=[
                    {"role": "system", "content": CLASSIFIER_PROMPT},
                    {"role": "user", "content": text},
                ],
                model=self._model,
                max_tokens=3,
            )
        )
        return response.content


def _decision_from(answer: str, elapsed_ms: float) -> Decision:
    word = answer.strip().split(maxsplit=1)[0].strip(".!,:").casefold() if answer.strip() else ""
    note = f"classifier said {word!r} in {elapsed_ms:.0f} ms"
    if word == "cancel":
        return Decision.cancel(note, stop_tools=True)
    if word == "parallel":
        return Decision.parallel(note)
    if word == "queue":
        return Decision.queue(note)
    return Decision.queue(f"classifier answered {answer[:40]!r}, not a strategy; queued")
