"""One-time log-in codes: what `wakeful open` puts in the link instead of the admin
token. A link lands in the browser's history and may be shared by mistake; a code is
good for one log-in within two minutes, then worth nothing. Kept in memory: a restart
voids the codes not yet used (run `wakeful open` again)."""

from __future__ import annotations

import secrets
import time

CODE_TTL_S = 120.0
MAX_CODES = 32  # outstanding at once; the oldest goes first


class LoginCodes:
    def __init__(self, ttl_s: float = CODE_TTL_S) -> None:
        self._ttl_s = ttl_s
        self._codes: dict[str, float] = {}  # code → when it lapses (monotonic)

    def issue(self) -> str:
        self._forget_lapsed()
        while len(self._codes) >= MAX_CODES:
            del self._codes[next(iter(self._codes))]
        code = secrets.token_urlsafe(24)
        self._codes[code] = time.monotonic() + self._ttl_s
        return code

    def take(self, code: str) -> bool:
        """True once for a code issued within its lifetime; False ever after."""
        lapses = self._codes.pop(code, None)
        return lapses is not None and time.monotonic() < lapses

    def _forget_lapsed(self) -> None:
        now = time.monotonic()
        for code in [c for c, lapses in self._codes.items() if lapses <= now]:
            del self._codes[code]
