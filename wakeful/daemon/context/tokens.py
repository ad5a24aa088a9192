"""Token counts without a tokenizer download: an estimate the provider corrects.

The daemon may run offline, so no tokenizer files are fetched. A message's
size in tokens is estimated from its JSON length (about four characters a
token for English text and code), and the estimate is calibrated by the
prompt tokens the provider reports for each request — the truth the budget is
held against.
"""

from __future__ import annotations

import json
from typing import Any

CHARS_PER_TOKEN = 4.0
# How fast the calibration follows the provider's counts (0..1): new = old + RATE * error.
RATE = 0.5


def raw_estimate(item: Any) -> int:
    text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
    return max(1, int(len(text) / CHARS_PER_TOKEN))


class TokenEstimator:
    """Estimates, scaled by what the provider said the last requests really cost."""

    def __init__(self) -> None:
        self.scale = 1.0

    def count(self, item: Any) -> int:
        return int(raw_estimate(item) * self.scale) + 1

    def count_all(self, items: list[Any]) -> int:
        return sum(self.count(item) for item in items)

    def observe(self, estimated_raw: int, reported: int) -> None:
        """The provider counted ``reported`` prompt tokens for a request we estimated
        at ``estimated_raw`` (unscaled)."""
        if estimated_raw <= 0 or reported <= 0:
            return
        actual = reported / estimated_raw
        self.scale += RATE * (actual - self.scale)
