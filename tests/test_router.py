"""The router (SPEC §5): rules by kind, phrases, then a budgeted classifier; queue by default."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.core.router import Decision, Router, Strategy, stopped_tools
from wakeful.core.router.classifier import ModelClassifier
from wakeful.kernel.events import Event, user_message
from wakeful.llm import OpenAIProvider


def event(
    kind: str,
    text: str = "",
    *,
    priority: str = "normal",
    trusted: bool = True,
    source_type: str = "system",
) -> Event:
    return Event.parse(
        {
            "id": f"{kind}:1",
            "kind": kind,
            "source": {"type": source_type, "trusted": trusted},
            "channel": "test",
            "content": {"text": text},
            "context": {"priority": priority},
        }
    )


def decide(ev: Event, *, busy: bool | None = True) -> Decision:
    decision = Router().decide_fast(ev, busy=busy)
    assert decision is not None
    return decision


# --- rules by kind -----------------------------------------------------------


@pytest.mark.parametrize("busy", [True, False])
def test_user_interrupt_cancels_and_stops_tools(busy: bool) -> None:
    """A user.interrupt cancels and stops running tools."""
    decision = decide(user_message("stop everything", kind="user.interrupt"), busy=busy)
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is True


@pytest.mark.parametrize("text", ["wait, I was wrong", "Hold on!", "actually: use Beijing data"])
def test_user_interrupt_hold_cancels_without_stopping_tools(text: str) -> None:
    """A 'wait, …' interrupt cancels the model turn but lets running tools go on."""
    decision = decide(user_message(text, kind="user.interrupt"))
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is False


@pytest.mark.parametrize("kind", ["supervisor.instruction", "agent.interrupt"])
def test_supervisor_and_agent_interrupts_cancel_without_stopping_tools(kind: str) -> None:
    """supervisor.instruction and agent.interrupt cancel but leave tools running."""
    decision = decide(event(kind, "switch to plan B"))
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is False


@pytest.mark.parametrize("kind", ["webhook.received", "email.received", "system.alert"])
def test_urgent_priority_cancels(kind: str) -> None:
    """An external event its source marked urgent cancels (without stopping tools)."""
    decision = decide(event(kind, "payment failed", priority="urgent", trusted=False))
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is False


@pytest.mark.parametrize(
    "kind",
    ["tool.result", "timer.trigger", "webhook.received", "email.received", "shell.output"],
)
@pytest.mark.parametrize("busy", [True, False])
def test_routine_kinds_queue(kind: str, busy: bool) -> None:
    """Tool results, timers, webhooks, email and shell output queue, even when they say stop."""
    decision = decide(event(kind, "stop", priority="high"), busy=busy)
    assert decision.strategy is Strategy.QUEUE


@pytest.mark.parametrize("text", ["stop", "what time is it?", "add a chart"])
def test_user_input_when_idle_queues(text: str) -> None:
    """When the session is idle, any user.input is queued: it runs now anyway."""
    assert decide(user_message(text), busy=False).strategy is Strategy.QUEUE


# --- phrases while busy --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "stop",
        "STOP!",
        "cancel that please",
        "never mind",
        "Stopp!",
        "arrête",
        "¡cancela!",
        "annulla",
        "стоп",
        "отмена!",
        "停止",
        "やめて",
        "취소",
    ],
)
def test_stop_phrases_cancel_and_stop_tools(text: str) -> None:
    """Short stop requests in several languages cancel and stop the running tools."""
    decision = decide(user_message(text))
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is True


def test_wait_while_busy_cancels_without_stopping_tools() -> None:
    """A busy 'wait, …' correction cancels the model turn but keeps tools running."""
    decision = decide(user_message("wait, I was wrong"))
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is False


@pytest.mark.parametrize(
    "text",
    [
        "don't stop the build until the tests pass",
        "please make sure the summary covers how to stop the service cleanly",
        "wait for the build",
    ],
)
def test_long_or_embedded_stop_words_do_not_cancel(text: str) -> None:
    """A longer message that merely contains 'stop' or starts with 'wait for' is not a cancel."""
    decision = Router().decide_fast(user_message(text), busy=True)
    assert decision is not None
    assert decision.strategy is Strategy.QUEUE


@pytest.mark.parametrize("text", ["don't stop the build", "no, don't cancel it"])
def test_negated_stop_does_not_cancel(text: str) -> None:
    """A short message that says NOT to stop must not cancel and kill the running tools."""
    decision = Router().decide_fast(user_message(text), busy=True)
    assert decision is None or decision.strategy is not Strategy.CANCEL


@pytest.mark.parametrize("text", ["what time is it?", "What's the date?", "quelle heure est-il ?"])
def test_quick_question_while_busy_goes_parallel(text: str) -> None:
    """A quick independent question while busy is answered in parallel."""
    assert decide(user_message(text)).strategy is Strategy.PARALLEL


async def _no_classifier_decision(text: str) -> Decision:
    return await Router().decide(user_message(text), busy=True)


@pytest.mark.anyio
async def test_ordinary_message_without_classifier_queues() -> None:
    """Without a classifier, an ordinary busy message is queued."""
    decision = await _no_classifier_decision("remember to answer in Japanese")
    assert decision.strategy is Strategy.QUEUE


def test_ordinary_message_with_classifier_is_left_to_it() -> None:
    """With a classifier configured, the fast rules defer an ordinary busy message (None)."""

    class Never:
        async def classify(self, ev: Event) -> Decision:
            raise AssertionError("not called by decide_fast")

    assert Router(Never()).decide_fast(user_message("use Beijing data"), busy=True) is None


# --- another daemon of the fleet runs the session (busy unknown) ----------------


@pytest.mark.parametrize(
    ("text", "stop_tools"), [("stop", True), ("Stopp!", True), ("wait, I was wrong", False)]
)
def test_stop_phrase_for_another_daemons_session_cancels(text: str, stop_tools: bool) -> None:
    """Where the event is accepted is where it is routed: a stop or wait phrase cancels
    even though this daemon cannot see whether the owner's loop is busy."""
    decision = decide(user_message(text), busy=None)
    assert decision.strategy is Strategy.CANCEL
    assert decision.stop_tools is stop_tools


@pytest.mark.parametrize("text", ["what time is it?", "use Beijing data", "don't stop"])
def test_other_messages_for_another_daemons_session_queue(text: str) -> None:
    """No parallel answer and no classifier call on a guess of the owner's state: queued,
    as for an idle session (the owner's next safe point takes it)."""

    class Never:
        async def classify(self, ev: Event) -> Decision:
            raise AssertionError("not asked for another daemon's session")

    decision = Router(Never()).decide_fast(user_message(text), busy=None)
    assert decision is not None and decision.strategy is Strategy.QUEUE


# --- the model classifier -------------------------------------------------------

BUDGET_MS = 400


@pytest.fixture
async def classifier_router(model_server: FakeModelServer) -> AsyncIterator[Router]:
    """A router whose classifier is a real OpenAIProvider on the fake server, no retries."""
    provider = OpenAIProvider(
        model_server.base_url, "sk-test", "fake-model", timeout_s=5.0, max_retries=0
    )
    yield Router(ModelClassifier(provider, "tiny-router", budget_ms=BUDGET_MS))
    await provider.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "strategy", "stop_tools"),
    [
        ("cancel", Strategy.CANCEL, True),
        ("Cancel.", Strategy.CANCEL, True),
        ("parallel", Strategy.PARALLEL, False),
        ("queue", Strategy.QUEUE, False),
        (" QUEUE\n", Strategy.QUEUE, False),
    ],
)
async def test_classifier_answers_map_to_strategies(
    model_server: FakeModelServer,
    classifier_router: Router,
    answer: str,
    strategy: Strategy,
    stop_tools: bool,
) -> None:
    """The classifier's one-word answer becomes the matching strategy."""
    model_server.push(Reply(text=answer))
    decision = await classifier_router.decide(user_message("make it blue instead"), busy=True)
    assert decision.strategy is strategy
    assert decision.stop_tools is stop_tools
    [request] = model_server.requests
    body: dict[str, Any] = request.body
    assert body["model"] == "tiny-router"
    assert body["messages"][-1] == {"role": "user", "content": "make it blue instead"}


@pytest.mark.anyio
async def test_slow_classifier_falls_back_to_queue_within_budget(
    model_server: FakeModelServer, classifier_router: Router
) -> None:
    """A classifier slower than its budget yields queue, decided within the budget."""
    model_server.push(Reply(text="cancel", first_token_delay_s=5.0))
    started = time.monotonic()
    decision = await classifier_router.decide(user_message("make it blue instead"), busy=True)
    elapsed = time.monotonic() - started
    assert decision.strategy is Strategy.QUEUE
    assert elapsed < BUDGET_MS / 1000 + 0.5
    assert elapsed >= BUDGET_MS / 1000 * 0.9


@pytest.mark.anyio
@pytest.mark.parametrize("status", [500, 429, 400, 401])
async def test_classifier_error_falls_back_to_queue(
    model_server: FakeModelServer, classifier_router: Router, status: int
) -> None:
    """An error status from the classifier's endpoint yields queue."""
    model_server.push(Reply(status=status))
    decision = await classifier_router.decide(user_message("make it blue instead"), busy=True)
    assert decision.strategy is Strategy.QUEUE
    assert len(model_server.requests) == 1  # max_retries=0: asked once


@pytest.mark.anyio
@pytest.mark.parametrize("answer", ["banana", "I think you should stop", ""])
async def test_classifier_gibberish_falls_back_to_queue(
    model_server: FakeModelServer, classifier_router: Router, answer: str
) -> None:
    """An answer that is not one of the three strategies yields queue."""
    model_server.push(Reply(text=answer))
    decision = await classifier_router.decide(user_message("make it blue instead"), busy=True)
    assert decision.strategy is Strategy.QUEUE


@pytest.mark.anyio
async def test_classifier_not_asked_when_rules_decide(
    model_server: FakeModelServer, classifier_router: Router
) -> None:
    """Events the fast rules settle never reach the classifier."""
    for ev, busy in [
        (user_message("stop"), True),
        (user_message("what time is it?"), True),
        (user_message("anything"), False),
        (event("tool.result", "done"), True),
    ]:
        await classifier_router.decide(ev, busy=busy)
    assert model_server.requests == []


# --- a stored decision's stop, derived again (subagents after a restart) -----------


@pytest.mark.parametrize(
    ("ev", "strategy", "stopped"),
    [
        (user_message("stop everything", kind="user.interrupt"), "cancel", True),
        (user_message("wait, I was wrong", kind="user.interrupt"), "cancel", False),
        (user_message("stop now"), "cancel", True),  # by phrase, while busy
        (user_message("wait, use the other file"), "cancel", False),
        (user_message("the report is about Q3"), "cancel", True),  # the classifier's cancel
        (user_message("the report is about Q3"), "queue", False),
        (event("subagent.result", priority="urgent"), "cancel", False),
        (event("agent.interrupt"), "cancel", False),
        (user_message("stop everything", kind="user.interrupt"), None, False),  # never routed
    ],
)
def test_a_stored_decision_says_again_whether_it_stopped_tools(
    ev: Event, strategy: str | None, stopped: bool
) -> None:
    """The store keeps a decision's strategy, not its stop flag: the same rules give it."""
    assert stopped_tools(ev, strategy) is stopped
