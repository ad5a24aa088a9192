"""Chain step 3, the taint gate: a tainted session asks before it acts.

Once untrusted text is in a session's context, any consequential call (send,
shell, network, write outside the workspace, spend) might be the sender's
wish rather than the owner's, so the owner decides.
"""

from __future__ import annotations

from wakeful.core.effects import Effect
from wakeful.safety.ruling import PolicyCall, Ruling, Verdict

_CAN = {
    Effect.SEND: "send a message to someone else",
    Effect.SHELL: "run a program",
    Effect.NETWORK: "reach a host on the network",
    Effect.WRITE_OUTSIDE: "change things outside the workspace",
    Effect.SPEND: "spend money",
}


class TaintGate:
    name = "taint_gate"

    async def check(self, call: PolicyCall) -> Ruling | None:
        if call.taint is None or not call.consequential:
            return None
        # Which input tainted the session travels with the approval on its own.
        return Ruling(
            Verdict.ASK,
            f"{call.tool} can {_CAN[call.effect]}, and this session read untrusted input",
            self.name,
        )
