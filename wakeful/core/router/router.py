"""Router: fast rules by kind, then the phrase pre-filter, then the classifier.

Queue is the default. Interrupting tempts the model to trust placeholders,
so only kinds that mean "now" and messages that clearly say stop cancel.

In a fleet the daemon that accepts an event decides, and it may not be the one
running the session's loop: ``busy=None`` says so (whether the loop is busy is not
known here). A stop or wait phrase still cancels — the owner is told, and an
interrupt finds nothing to cut short when its loop is idle (see
:meth:`FleetMember._interrupt`) — and anything else is queued as for an idle
session: a parallel answer or the classifier's call would be guesses.
"""

from __future__ import annotations

from wakeful.core.router.classifier import Classifier
from wakeful.core.router.decision import Decision, Strategy
from wakeful.core.router.phrases import is_hold_request, is_quick_question, is_stop_request
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event

URGENT_KINDS = frozenset(
    {EventKind.USER_INTERRUPT, EventKind.SUPERVISOR_INSTRUCTION, EventKind.AGENT_INTERRUPT}
)


class Router:
    def __init__(self, classifier: Classifier | None = None) -> None:
        self._classifier = classifier

    def decide_fast(self, event: Event, *, busy: bool | None) -> Decision | None:
        """A decision from rules alone, or None when only the classifier can tell.
        ``busy=None``: the session's loop runs on another daemon of the fleet."""
        if event.kind in URGENT_KINDS:
            stop = event.kind == EventKind.USER_INTERRUPT and not is_hold_request(
                event.content.text
            )
            return Decision.cancel(f"{event.kind} is urgent by kind", stop_tools=stop)
        if event.context.priority == "urgent":
            return Decision.cancel("marked urgent by its source", stop_tools=False)
        if event.kind != EventKind.USER_INPUT:
            return Decision.queue(f"{event.kind} is routine: handled at the next safe point")
        if busy is None:
            return self._by_stop_phrase(event.content.text) or Decision.queue(
                "the session runs on another daemon: queued for it"
            )
        if not busy:
            return Decision.queue("the session is idle: it runs now")
        return self._by_phrase(event.content.text)

    async def decide(self, event: Event, *, busy: bool | None) -> Decision:
        fast = self.decide_fast(event, busy=busy)
        if fast is not None:
            return fast
        if self._classifier is None:
            return Decision.queue("no classifier configured: user input is queued")
        return await self._classifier.classify(event)

    def _by_stop_phrase(self, text: str) -> Decision | None:
        if is_stop_request(text):
            return Decision.cancel("the message asks to stop", stop_tools=True)
        if is_hold_request(text):
            return Decision.cancel("the message asks to wait or corrects", stop_tools=False)
        return None

    def _by_phrase(self, text: str) -> Decision | None:
        stop = self._by_stop_phrase(text)
        if stop is not None:
            return stop
        if is_quick_question(text):
            return Decision.parallel("a quick independent question")
        if self._classifier is None:
            return Decision.queue("no stop or quick-question phrase; no classifier: queued")
        return None


def stopped_tools(event: Event, strategy: str | None) -> bool:
    """Whether a stored decision stopped the session's running tools (a "stop", not a
    "wait, …"). The store keeps a decision's strategy and reason, not this flag, so it
    is derived again from the event by the same rules; a cancel those rules would not
    make was the classifier's, and the classifier's cancel always stops."""
    if strategy != Strategy.CANCEL:
        return False
    by_rules = Router().decide_fast(event, busy=True)  # a user.input cancelled: it was busy
    if by_rules is None or by_rules.strategy is not Strategy.CANCEL:
        return True
    return by_rules.stop_tools
