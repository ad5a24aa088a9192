"""Which files hold exactly what the agent wrote: the ledger behind file taint.

A file the agent did not write may carry a third party's words (a cloned
repository, a downloaded page, a mail attachment saved by a script), so
reading it taints the session. write_file and edit_file record the sha256 of
what they wrote; a later read whose bytes hash the same is the agent's own
text and leaves the session clean. Anything else — a file changed since by
another process, or never written by the agent — counts as third-party.

The ledger lives in the store's channel state (``written:<resolved path>``),
so a restart does not turn the agent's own notes into untrusted text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from wakeful.store.base import ChannelState
from wakeful.store.memory_state import MemoryState

KEY_PREFIX = "written:"


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


class WrittenFiles:
    """The sha256 of what the agent last wrote to each file, by resolved path."""

    def __init__(self, state: ChannelState | None = None) -> None:
        self._state: ChannelState = state if state is not None else MemoryState()

    async def record(self, path: Path, sha256: str) -> None:
        """``path`` (resolved) now holds text the agent wrote, hashing to ``sha256``."""
        await self._state.put_state(_key(path), sha256)

    async def forget(self, path: Path) -> None:
        """``path`` no longer holds only the agent's text (e.g. written while tainted)."""
        await self._state.put_state(_key(path), None)

    async def wrote(self, path: Path, sha256: str) -> bool:
        """Whether content hashing to ``sha256`` at ``path`` is what the agent wrote there."""
        return await self._state.get_state(_key(path)) == sha256


def _key(path: Path) -> str:
    return f"{KEY_PREFIX}{path}"
