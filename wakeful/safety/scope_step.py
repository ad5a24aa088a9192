"""Chain step 0, the session's tool scope: a session restricted to some tools
(a subagent) calls only those, whatever name it sends; and a tool meant only for
such sessions (report_to_parent) is refused in every other.

The tools array such a session is sent already leaves the others out; this
step is what makes that a rule rather than a hint (a tool called by name
still reaches the registry). First in the chain, so an out-of-scope call is
refused before any step asks the owner about it.
"""

from __future__ import annotations

from typing import Protocol

from wakeful.safety.ruling import PolicyCall, Ruling, Verdict

# The most allowed tools a refusal names.
LISTED = 20


class ToolScope(Protocol):
    async def allowed_tools(self, session: str) -> frozenset[str] | None: ...


class ScopeStep:
    name = "tool_scope"

    def __init__(self, scope: ToolScope) -> None:
        self._scope = scope

    async def check(self, call: PolicyCall) -> Ruling | None:
        allowed = await self._scope.allowed_tools(call.session)
        if allowed is None or call.tool in allowed:
            return None
        names = sorted(allowed)
        listing = ", ".join(names[:LISTED]) or "(none)"
        if len(names) > LISTED:  # a top-level session may use nearly every tool
            listing += f" and {len(names) - LISTED} more (search_tools finds them)"
        return Ruling(
            Verdict.DENY,
            f"{call.tool} is not among this session's tools; it may use only: {listing}",
            self.name,
        )
