"""The heartbeat's unread-mail check: per watched mailbox, the count of unseen
messages its watcher last read (IMAP STATUS (UNSEEN) after each sync), a finding only
when the count rose since the check last looked. No round trip of its own: the
watcher already holds the connection.

The key names the mailbox's UIDNEXT and the count, so a count that stays is said once
(the heartbeat remembers keys), and one that rises again with new mail is news again.
"""

from __future__ import annotations

from collections.abc import Sequence

from wakeful.channels.email.watcher import MailboxWatcher
from wakeful.core.heartbeat_checks import Finding


class UnreadMailCheck:
    def __init__(self, watchers: Sequence[MailboxWatcher]) -> None:
        self._watchers = watchers
        self._last: dict[str, int] = {}  # mailbox → the count at the last look

    async def __call__(self) -> list[Finding]:
        found = []
        for watcher in self._watchers:
            if watcher.unseen is None:  # not synced yet (or another daemon watches it)
                continue
            uidnext, count = watcher.unseen
            name = f"{watcher.account.name}/{watcher.mailbox}"
            before = self._last.get(name, 0)
            self._last[name] = count
            if count > before:
                found.append(
                    Finding(
                        f"mail-unseen:{name}:{uidnext}:{count}",
                        f"mailbox {watcher.mailbox!r} of account {watcher.account.name!r} "
                        f"has {count} unseen message{'s' if count != 1 else ''} "
                        f"({count - before} more than at the last look; search_email finds them)",
                    )
                )
        return found
