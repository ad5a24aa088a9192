"""Chain step 3, the taint gate: a tainted session asks before it acts.

Once untrusted text is in a session's context, any consequential call (send,
shell, network, write outside the workspace, spend) might be the sender's
wish rather than the owner's, so the owner decides.
"""

from __future__ import annotations

from wakeful.safety.ruling import PolicyCall, Ruling, Verdict


class TaintGate:
    name = "taint_gate"

    async def check(self, call: PolicyCall) -> Ruling | None:
        if call.taint is None or not call.consequential:
            return None
        return Ruling(
            Verdict.ASK,
            f"{call.tool} ({call.effect.value}) in a session that read untrusted input: "
            f"{call.taint.summary()}",
            self.name,
        )
