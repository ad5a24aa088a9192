"""Chain step after confinement: the owner's standing instructions are the owner's.

``AGENTS.md`` in the workspace becomes part of every session's system prompt at
the next start, and every skill under the skill roots is offered to every
session. A write to either would turn whatever the writer was told into
standing instructions — from a tainted session, a stranger's words made
permanent — so no tool call may make one, approved or not: the owner edits them
by hand. (Inside the sandbox the same paths are mounted read-only, also when
they do not exist yet: wakeful/safety/sandbox.py.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.safety.ruling import PolicyCall, Ruling, Verdict

STANDING_FILES = ("AGENTS.md",)


class StandingInstructions:
    name = "standing_instructions"

    def __init__(self, skill_roots: Sequence[Path] = ()) -> None:
        self._skill_roots = [Path(root).resolve() for root in skill_roots]

    async def check(self, call: PolicyCall) -> Ruling | None:
        protected = {(call.workspace / name).resolve() for name in STANDING_FILES}
        for given in call.reach.write_paths:
            place = resolve_inside(given, call.workspace)
            if isinstance(place, Outside):
                continue  # confinement refuses it already
            if place in protected:
                what = f"{place.name}, the owner's standing instructions for every session"
            elif root := next((r for r in self._skill_roots if place.is_relative_to(r)), None):
                what = f"{place}, inside the skills directory {root}"
            else:
                continue
            return Ruling(
                Verdict.DENY,
                f"{call.tool} may not change {what}: only the owner edits these, by hand. "
                "Tell the user what you would change instead.",
                self.name,
            )
        return None
