"""Failed attempts per client address in a sliding window (``/login``).

The address is the TCP peer's: ``X-Forwarded-For`` is trusted from no one.
Behind a reverse proxy every client shares the proxy's address, so a guesser
there also delays the owner's log-in from the page for a minute; the bearer
token and `wakeful open` are not limited. Memory is bounded: at most
``max_clients`` addresses are tracked, the one seen longest ago is forgotten.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable


class FailureLimit:
    def __init__(
        self,
        max_failures: int,
        window_s: float,
        *,
        max_clients: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_clients = max_clients
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, client: str) -> int | None:
        """Seconds until ``client`` may try again, or None when it may now."""
        failures = self._recent(client)
        if failures is None or len(failures) < self.max_failures:
            return None
        return max(1, math.ceil(failures[0] + self.window_s - self._clock()))

    def failed(self, client: str) -> None:
        failures = self._recent(client)
        if failures is None:
            failures = self._failures[client] = deque(maxlen=self.max_failures)
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)
        self._failures.move_to_end(client)
        failures.append(self._clock())

    def _recent(self, client: str) -> deque[float] | None:
        failures = self._failures.get(client)
        if failures is None:
            return None
        oldest = self._clock() - self.window_s
        while failures and failures[0] <= oldest:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        return failures
