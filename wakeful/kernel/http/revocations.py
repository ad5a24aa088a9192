"""Web sessions logged out before they expire.

The session cookie is stateless (signed, valid 30 days), so deleting it in
the browser left any copy working. ``/logout`` records the session's id here;
a recorded id is refused everywhere the cookie is checked. The record is kept
in the data dir (``web-logouts``, one ``issued.nonce`` per line, owner-only)
because a cookie outlives a restart, and entries are dropped once the cookie
would have expired anyway, so the file stays small.

The API and the web page each build their own :class:`~wakeful.kernel.http.auth.TokenCheck`;
they share one record through :func:`revocations_for`, keyed by the cookie's
signing key (one per admin token), so a logout on the page holds for the API.
"""

from __future__ import annotations

import time
from pathlib import Path

from wakeful.kernel.atomic_file import write_atomic

REVOCATIONS_FILE = "web-logouts"


class Revocations:
    def __init__(self, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._issued: dict[str, int] = {}  # session id -> issued (unix s)
        self.path: Path | None = None

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._issued

    def load(self, data_dir: Path) -> None:
        """Read the record kept in ``data_dir`` (a missing file: none logged out)."""
        self.path = data_dir / REVOCATIONS_FILE
        try:
            lines = self.path.read_text().split()
        except FileNotFoundError:
            return
        for line in lines:
            issued, _, _nonce = line.partition(".")
            if issued.isdigit():
                self._issued[line] = int(issued)
        self._prune()

    def revoke(self, session_id: str) -> None:
        """Refuse ``session_id`` from now on (in memory at once; on disk by :meth:`save`)."""
        issued, _, _ = session_id.partition(".")
        self._issued[session_id] = int(issued) if issued.isdigit() else int(time.time())
        self._prune()

    def save(self) -> None:
        """Write the record (whole, owner-only); blocking, run it in a thread."""
        if self.path is None:
            return
        write_atomic(self.path, "".join(f"{sid}\n" for sid in list(self._issued)), mode=0o600)

    def _prune(self) -> None:
        oldest = time.time() - self.max_age_s
        for sid, issued in list(self._issued.items()):
            if issued < oldest:
                del self._issued[sid]


_shared: dict[bytes, Revocations] = {}


def revocations_for(key: bytes, max_age_s: float) -> Revocations:
    """The process's record for cookies signed with ``key``."""
    return _shared.setdefault(key, Revocations(max_age_s))
