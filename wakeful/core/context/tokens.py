"""Token counts without a tokenizer download: an estimate the provider corrects.

The daemon may run offline, so no tokenizer files are fetched. A message's
size in tokens is estimated from its JSON length (about four characters a
token for English text and code), and the estimate is calibrated by the
prompt tokens the provider reports for each request — the truth the budget is
held against, when it is plausible. Some OpenAI-compatible servers report
nothing or nonsense (10 tokens for every request): followed blindly, such a
figure shrinks every estimate until the budget never triggers and the real
window overflows. A figure outside [MIN_SCALE, MAX_SCALE] times the estimate
is therefore ignored (logged once), and the scale, a running mix of plausible
figures, stays inside that range.
"""

from __future__ import annotations

import json
from typing import Any

import structlog

log = structlog.get_logger(__name__)

CHARS_PER_TOKEN = 4.0
# How fast the calibration follows the provider's counts (0..1): new = old + RATE * error.
RATE = 0.5
# What real tokenizers make of our JSON, against four characters a token: English
# prose and code in o200k / cl100k / Claude's run 3-5 characters a token (scale
# 0.8-1.3); only long runs of one character pack tighter, and a trajectory's
# JSON punctuation and tool schemas keep a whole request well above half. CJK
# text is about one token a character (scale ~4). Below half, a provider's
# count would let a request twice the window through; above four it is not
# text we send.
MIN_SCALE = 0.5
MAX_SCALE = 4.0


def raw_estimate(item: Any) -> int:
    text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
    return max(1, int(len(text) / CHARS_PER_TOKEN))


class TokenEstimator:
    """Estimates, scaled by what the provider said the last requests really cost."""

    def __init__(self, session: str = "") -> None:
        self.scale = 1.0
        self._session = session
        self._warned = False  # an implausible figure is logged once, not per request

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
        if not MIN_SCALE <= actual <= MAX_SCALE:
            self._implausible(estimated_raw, reported)
            return
        self.scale += RATE * (actual - self.scale)

    def _implausible(self, estimated_raw: int, reported: int) -> None:
        if self._warned:
            return
        self._warned = True
        log.warning(
            "the model endpoint's prompt token counts are implausible; the estimate ignores them",
            session=self._session,
            reported=reported,
            estimated=estimated_raw,
            plausible=f"{MIN_SCALE:g}-{MAX_SCALE:g} x the estimate",
        )
