"""Whose words a tool result or an event carries: the one declaration (SPEC §8).

**Taint by construction.** Every tool result and every event is a third
party's words — it taints the session it enters — unless it is declared here
to hold only what the owner or the daemon itself wrote. A new tool or a new
event kind is untrusted until someone adds it to a table below with the reason
it is safe; nothing else in the code can make a result or an event trusted.

Three kinds of declaration:

- :data:`OWN_RESULTS`: tools whose results are only the daemon's words (the
  clock, "sent", "timer T3 set"). They never taint.
- :data:`VOUCHING_RESULTS`: tools that can tell, per result, whether a third
  party's words are in it (a file the agent wrote itself, a command that printed
  nothing). They taint unless they vouch for the result by leaving
  ``ToolOutput.untrusted_source`` unset.
- :data:`TRUSTABLE_EVENT_KINDS`: the kinds of event whose producer may claim
  ``source.trusted`` (the authenticated owner, the daemon's own reports). Any
  other kind is untrusted whatever its producer says.

MCP tools vouch per result (see :class:`ResultTrust`): the adapter names every
answer of a server as untrusted unless the operator wrote ``[[mcp.servers]]
trusted = true`` for it; its own errors (a server that died mid-call) are ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wakeful.kernel.event_kinds import EventKind

# Tools whose every result (errors included) is written by the daemon: a
# confirmation, an id, the daemon's own state. The value says why.
OWN_RESULTS: Mapping[str, str] = {
    "get_time": "the daemon's clock",
    "reply_to_user": "whether the reply was delivered",
    "send_user_notification": "whether the notification was delivered",
    "write_file": "what was written where (the content is the agent's own)",
    "search_tools": "names and descriptions of the registered tools",
    "load_skill": "a skill the owner installed; skills are never writable by the agent",
    "set_timer": "the timer's id and time",
    "cancel_timer": "whether the timer was cancelled",
    "start_shell": "the new task's id (its output arrives as untrusted events)",
    "monitor_shell": "the pattern now watched",
    "cancel_task": "the task's state after the cancel",
    "update_plan": "how many steps the plan has (the steps are the agent's own words)",
    "remember": "the entry's id and where it was kept (the text is the agent's own)",
    "spawn_subagent": "the child's id (what it says arrives as events carrying its taint)",
    "send_message_to_subagent": "whether the message was queued",
    "cancel_subagent": "whether the child was stopped",
    "report_to_parent": "whether the report was queued",
    "request_human_approval": "the approval's id (the owner's answer is an event)",
    "request_human_input": "the question's id (the owner's answer is an event)",
    "draft_email": "the draft's id (its text is the agent's own)",
    "send_email": "whether the mail was handed to the server",
    "connect_channel": "the subscription's id (what it watches arrives as events)",
    "disconnect_channel": "whether the subscription was removed",
}

# Tools that decide per result: untrusted unless the tool vouches for it.
VOUCHING_RESULTS: Mapping[str, str] = {
    "read_file": "a file the agent wrote itself (the ledger of written files) is its own",
    "edit_file": "editing a file the agent wrote itself shows only its own text",
    "grep": "matches only in files the agent wrote itself are its own",
    "shell_exec": "a command that printed nothing carries nobody's words",
    "memory_search": "the owner's and the agent's own lines; review and others' words taint",
    "memory_get": "MEMORY.md and daily notes are the owner's and the agent's; review.md taints",
}

# Event kinds whose producer may claim the owner's or the daemon's authorship.
TRUSTABLE_EVENT_KINDS: Mapping[str, str] = {
    EventKind.USER_INPUT: "the owner, authenticated by the channel (token, cookie, pairing)",
    EventKind.USER_INTERRUPT: "the owner, authenticated by the channel",
    EventKind.EMAIL_RECEIVED: "the owner's own address, authenticated by the receiving server",
    EventKind.APPROVAL_DECIDED: "the owner's answer to an approval or a question",
    EventKind.TOOL_RESULT: "a call's late result; the call's own output taints when it runs",
    EventKind.TIMER_TRIGGER: "a timer the agent set (one set while tainted carries the taint)",
    EventKind.AGENT_INPUT: "a message between agents (it carries the sender's taint)",
    EventKind.AGENT_INTERRUPT: "an urgent message between agents (it carries the sender's taint)",
    EventKind.SUBAGENT_TASK: "the task a parent gave its child (it carries the parent's taint)",
    EventKind.SUBAGENT_MESSAGE: "a parent's message to its child (its taint as it was sent)",
    EventKind.SUBAGENT_RESULT: "a child's report (it carries the child's taint)",
    EventKind.SYSTEM_ALERT: "the daemon's own report of a fault",
    EventKind.HEARTBEAT: "the daemon's own checks: ids and states, never a task's output",
    EventKind.USER_INACTIVE: "the daemon noticing the owner has been away",
    EventKind.PROCESS_TIMEOUT: "the daemon's notice that a task is past its limit",
}


@dataclass(frozen=True)
class ResultTrust:
    """The tool-result half of the declaration, with the configured MCP servers."""

    # Each configured MCP server's tool-name prefix (mcp.adapter.namespaced(server, "")).
    mcp_prefixes: tuple[str, ...] = ()

    def vouches(self, tool: str) -> bool:
        """Whether ``tool`` may say, per result, that no third party's words are in it."""
        return tool in VOUCHING_RESULTS or tool.startswith(self.mcp_prefixes)

    def taint_of(self, tool: str, untrusted_source: str | None) -> str | None:
        """What the result's taint is named as, or None when it carries no third party's
        words. ``untrusted_source``: what the tool itself said its result holds."""
        if tool in OWN_RESULTS:
            return None
        if self.vouches(tool):
            return untrusted_source
        # Undeclared: a third party's words, named by the tool if it said what they were.
        return untrusted_source or f"{tool} result (not declared to hold only our own words)"


def event_kind_trustable(kind: str) -> bool:
    return kind in TRUSTABLE_EVENT_KINDS
