"""Chain step 1, confinement: every path a call names lies inside the workspace.

Reads may also reach the saved tool outputs (that is how the model reads a
full output another tool saved); writes never. The directory a command runs
in is a path too.
"""

from __future__ import annotations

from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.safety.ruling import PolicyCall, Ruling, Verdict


class WorkspaceConfinement:
    name = "confinement"

    async def check(self, call: PolicyCall) -> Ruling | None:
        reach = call.reach
        for given in reach.write_paths:
            if isinstance(place := resolve_inside(given, call.workspace), Outside):
                return Ruling(Verdict.DENY, place.reason, self.name)
        readable = (call.output_dir,)
        for given in reach.paths:
            if isinstance(place := resolve_inside(given, call.workspace, also=readable), Outside):
                return Ruling(Verdict.DENY, place.reason, self.name)
        if reach.cwd is not None and isinstance(
            place := resolve_inside(reach.cwd, call.workspace), Outside
        ):
            return Ruling(Verdict.DENY, f"cwd {place.reason}", self.name)
        return None
