"""Who wrote: an IRC nick is not an identity, so the owner is recognised otherwise.

In order: a services account the server vouches for (IRCv3 ``account-tag``,
sent by the server and never by a client, so it cannot be forged) named as
``account:<name>`` in ``allowed_users``; else a ``nick!user@host`` mask there
(``*`` and ``?`` match). The user id of a match is the config entry itself, so
``ChatInbound``'s allowed list holds exactly the entries. Anyone else's user id
is ``account:<name>`` when logged in to services, else their full
``nick!user@host`` — what a pairing approves, and stable while they keep the
same nick, user and host.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from wakeful.channels.irc.config import ACCOUNT_PREFIX


def mask_pattern(mask: str) -> re.Pattern[str]:
    """A nick!user@host glob as a regex: only * and ? are special (nicks may hold [ ])."""
    parts = ("." * (ch == "?") + ".*" * (ch == "*") or re.escape(ch) for ch in mask)
    return re.compile("".join(parts) + r"\Z", re.IGNORECASE)


class Identities:
    def __init__(self, allowed: Sequence[str]) -> None:
        self.allowed = list(allowed)
        self._masks = [(entry, mask_pattern(entry)) for entry in allowed if "!" in entry]

    def user_id(self, prefix: str, account: str | None) -> str:
        """The stable id of the sender ``prefix`` (nick!user@host) logged in as ``account``."""
        known = account if account and account != "*" else None
        if known is not None and f"{ACCOUNT_PREFIX}{known}" in self.allowed:
            return f"{ACCOUNT_PREFIX}{known}"
        for entry, pattern in self._masks:
            if pattern.match(prefix):
                return entry
        return f"{ACCOUNT_PREFIX}{known}" if known is not None else prefix
