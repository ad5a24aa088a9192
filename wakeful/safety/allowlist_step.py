"""Chain step 2, the allowlist: destinations the owner named need no approval.

A consequential call whose every destination is allowlisted (``[safety]
email_allow``, ``http_allow``, ``shell_allow``) is allowed here, even from a
tainted session. A shell prefix matches only a plain command: one with a
separator, pipe, substitution or redirection could do anything after the
allowed part.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from email.utils import parseaddr
from urllib.parse import urlsplit

from wakeful.core.effects import Effect, Reach
from wakeful.safety.outbound import host_allowed
from wakeful.safety.ruling import PolicyCall, Ruling, Verdict

_SHELL_SPECIALS = re.compile(r"[;&|`$<>\n\r(){}\\*?\[\]~!#'\"]")


def email_allowed(address: str, allow: Sequence[str]) -> bool:
    # The address itself, as the e-mail tools read recipients (not a display name).
    address = parseaddr(address)[1].lower()
    if "@" not in address:
        return False
    domain = address.rsplit("@", 1)[1]
    return any(entry == address or entry == f"*@{domain}" for entry in allow)


def url_allowed(url: str, allow: Sequence[str]) -> bool:
    """A URL's host and port against ``http_allow`` (the same matching fetch_url's
    address guard uses, in wakeful/safety/outbound.py)."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    if not parts.hostname:
        return False
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    return host_allowed(parts.hostname, port, allow)


def shell_allowed(command: str, allow: Sequence[str]) -> bool:
    text = command.strip()
    if _SHELL_SPECIALS.search(text):
        return False
    words = text.split()
    for prefix in allow:
        wanted = prefix.split()
        if words[: len(wanted)] == wanted:
            return True
    return False


class Allowlist:
    name = "allowlist"

    def __init__(
        self,
        *,
        email_allow: Sequence[str] = (),
        http_allow: Sequence[str] = (),
        shell_allow: Sequence[str] = (),
    ) -> None:
        self.email_allow = list(email_allow)
        self.http_allow = list(http_allow)
        self.shell_allow = list(shell_allow)

    async def check(self, call: PolicyCall) -> Ruling | None:
        if not call.consequential:
            return None
        reach = call.reach
        if self._all_allowed(call.effect, reach):
            return Ruling(
                Verdict.ALLOW,
                f"every destination is in the {call.effect.value} allowlist",
                self.name,
            )
        return None

    def _all_allowed(self, effect: Effect, reach: Reach) -> bool:
        if effect is Effect.SEND and reach.recipients:
            return all(email_allowed(r, self.email_allow) for r in reach.recipients)
        if effect is Effect.NETWORK and reach.hosts:
            return all(url_allowed(h, self.http_allow) for h in reach.hosts)
        if effect is Effect.SHELL and reach.command is not None:
            return shell_allowed(reach.command, self.shell_allow)
        return False
