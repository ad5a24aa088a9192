"""One picture of a daemon's safety state, for `GET /api/safety` and `/api/status`.

Both the owner's safety endpoint and the status (which `wakeful status` and the
web page read) show the same dict, so it is built in one place.
"""

from __future__ import annotations

from typing import Any

from wakeful.safety.assembly import Safety


async def safety_overview(safety: Safety) -> dict[str, Any]:
    """``{"tainted": {session: {since, summary, sources}}, "breaker": {"trip_after",
    "denials": {session: n}}, "pending_approvals": n}``."""
    taints = await safety.taints.all()
    breakers = await safety.breaker.all()
    return {
        "tainted": {session: t.as_dict() for session, t in sorted(taints.items())},
        "breaker": {
            "trip_after": safety.breaker.trip_after,
            "denials": dict(sorted(breakers.items())),
        },
        "pending_approvals": len(await safety.approvals.pending()),
    }
