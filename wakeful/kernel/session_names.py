"""What a session may be called: one rule for the daemon, the CLI and the web page.

Standard library only, so a client command can check a name before it sends anything
(a name the daemon would refuse is refused at once, not on every message after).
"""

from __future__ import annotations

import re

SESSION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")
SESSION_RULE = (
    "1-128 characters of letters, digits and _.:@- starting with a letter or digit "
    "(e.g. 'main', 'user:alice')"
)


def is_session_name(name: str) -> bool:
    return SESSION_PATTERN.match(name) is not None
