"""A name for one write call, written with what it stores.

A Redis call whose answer was lost (the connection dropped after the script ran) is
retried (``RedisStore._run``); the retry finds the data already there. Comparing the
token stored with its own tells "my first attempt wrote this" from "another call
did", so the retry reports what the first attempt did instead of "already there".
"""

from __future__ import annotations

import uuid


def new_token() -> str:
    """Names one call, so that its retry can tell its own earlier write from another's."""
    return uuid.uuid4().hex
