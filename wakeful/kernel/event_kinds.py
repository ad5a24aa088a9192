"""The kinds of event the daemon's own code makes and reacts to, by name.

``Event.kind`` stays a string — a package may bring a kind of its own (a new
source's ``"kettle.boiled"``) without touching the kernel — but every kind the
daemon itself names is spelled once, here: a typo is an AttributeError at import,
not a branch that silently never matches. Which kinds may claim the owner's or
the daemon's authorship is declared in ``wakeful/kernel/trust.py``.
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    # The owner, through a chat channel, the web page, the CLI or the HTTP API.
    USER_INPUT = "user.input"
    USER_INTERRUPT = "user.interrupt"
    # The daemon noticing the owner has been away.
    USER_INACTIVE = "user.inactive"
    # An operator steering the agent (SPEC's kinds; urgent by kind).
    SUPERVISOR_INSTRUCTION = "supervisor.instruction"
    # Between agents (a side session's report, an urgent message).
    AGENT_INPUT = "agent.input"
    AGENT_INTERRUPT = "agent.interrupt"
    # A call's late result, and the owner's decision on a call that waited for it.
    TOOL_RESULT = "tool.result"
    APPROVAL_DECIDED = "approval.decided"
    # The daemon's own reports.
    SYSTEM_ALERT = "system.alert"
    HEARTBEAT = "system.heartbeat"
    PROCESS_TIMEOUT = "process.timeout"
    # Sources.
    WEBHOOK_RECEIVED = "webhook.received"
    EMAIL_RECEIVED = "email.received"
    TIMER_TRIGGER = "timer.trigger"
    SHELL_OUTPUT = "shell.output"
    SHELL_EXITED = "shell.exited"
    FILE_CHANGED = "file.changed"
    HTTP_CHANGED = "http.changed"
    # Subagents.
    SUBAGENT_TASK = "subagent.task"
    SUBAGENT_MESSAGE = "subagent.message"
    SUBAGENT_RESULT = "subagent.result"


# The owner's own words: what the inactivity watch, the router and rendering look for.
OWNER_KINDS = frozenset({EventKind.USER_INPUT, EventKind.USER_INTERRUPT})
