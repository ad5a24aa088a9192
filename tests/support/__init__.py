"""Shared test helpers. Exported here, for the core tier (tests/core): the core built
directly, a scripted model, tiny tools, and awaiting conditions instead of sleeping.
Imported from their modules, for the integration tier: ``chat_config`` (a `wakeful run`
config with one chat platform) and ``sigkill_rounds`` (a real daemon on a chat platform,
killed again and again mid-conversation, answers every message exactly once)."""

from tests.support.changes import Changes
from tests.support.channel import RecordingChannel
from tests.support.core import (
    FAST_LIMITS,
    ROOM_CHANNEL,
    Core,
    build_core,
    crash_snapshot,
    loop_deps,
    open_test_store,
    opened_store,
)
from tests.support.provider import (
    ScriptedProvider,
    Step,
    calls,
    fails,
    main_session,
    reply,
    side_reply,
    side_session,
    tool_call,
)
from tests.support.tools import TestTools

__all__ = [
    "FAST_LIMITS",
    "ROOM_CHANNEL",
    "Changes",
    "Core",
    "RecordingChannel",
    "ScriptedProvider",
    "Step",
    "TestTools",
    "build_core",
    "calls",
    "crash_snapshot",
    "fails",
    "loop_deps",
    "main_session",
    "open_test_store",
    "opened_store",
    "reply",
    "side_reply",
    "side_session",
    "tool_call",
]
