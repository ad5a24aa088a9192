"""The spending hook: what guards every model call a session loop makes, when one is set.

A component (the budget, wakeful/budget/) may register one :class:`SpendGuard`. The
loop then asks it twice: before a safe point takes events (:meth:`SpendGuard.closed`:
a cap already reached leaves them queued, so nothing is lost and nothing is spent),
and around each call (:meth:`SpendGuard.reserve` the worst case before it is made,
:meth:`SpendGuard.settle` what it really used after). A call whose reservation would
cross a cap is refused with :class:`SpendRefused` and never made. The core knows no
caps, prices or windows: only this contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from wakeful.core.provider import ProviderError, Usage


class SpendRefused(ProviderError):
    """The call would cross a spending cap: it was not made. The events are kept."""


@dataclass(frozen=True)
class SpendRequest:
    """One model call, as the guard prices it."""

    session: str | None  # None: a one-off call (a summary, a side session)
    origin: str  # the source type of the event the run answers ("user", "webhook", …)
    model: str  # "": the configured model
    input_tokens: int  # the request's estimate
    max_output_tokens: int  # the reply limit the request carries


class SpendTicket(Protocol):
    """What ``reserve`` holds for one call until it is settled or released."""


class SpendGuard(Protocol):
    # The reply limit a guarded call must carry, so its worst case is known.
    reply_limit: int

    def closed(self, session: str, origin: str) -> str | None:
        """Why a run for ``session`` answering ``origin`` would be refused now, or None."""
        ...

    async def reserve(self, request: SpendRequest) -> SpendTicket:
        """Hold the call's worst case against every cap it counts towards; raise
        SpendRefused (nothing held) when that would cross one."""
        ...

    async def settle(self, ticket: SpendTicket, usage: Usage | None) -> None:
        """The call ended: count what it used (None: unknown, count the input estimate)
        in place of what was held."""
        ...
