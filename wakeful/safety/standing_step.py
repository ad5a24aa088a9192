"""Chain step after confinement: the owner's standing instructions are the owner's.

``AGENTS.md`` in the workspace becomes part of every session's system prompt
at the next start. A write to it would turn whatever the writer was told into
standing instructions — from a tainted session, a stranger's words made
permanent — so a file tool that changes it always needs the owner's approval.
(Shell commands already do in a tainted session; in the sandbox the file is
mounted read-only.)
"""

from __future__ import annotations

from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.safety.ruling import PolicyCall, Ruling, Verdict

STANDING_FILES = ("AGENTS.md",)


class StandingInstructions:
    name = "standing_instructions"

    async def check(self, call: PolicyCall) -> Ruling | None:
        protected = {(call.workspace / name).resolve() for name in STANDING_FILES}
        for given in call.reach.write_paths:
            place = resolve_inside(given, call.workspace)
            if not isinstance(place, Outside) and place in protected:
                return Ruling(
                    Verdict.ASK,
                    f"{call.tool} would change {place.name}, the owner's standing instructions "
                    "for every session",
                    self.name,
                )
        return None
