"""The owner's HTTP side of safety, behind the admin token.

- ``GET /api/approvals`` — a JSON list of pending approvals (``?all=1`` adds
  the decided ones with their decision);
- ``POST /api/approvals/{id}`` ``{"decision": "approve" | "deny", "reason": "..."}``;
- ``GET /api/safety`` — tainted sessions and breaker counts;
- ``POST /api/sessions/{session}/taint/clear`` and ``.../breaker/reset``.

The CLI (`wakeful approvals`, `approve`, `deny`, `taint`, `breaker`) and the web
page call these.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wakeful.core.approvals import DecideOutcome, already_decided
from wakeful.kernel.http.body import read_json_object
from wakeful.kernel.http.errors import ApiError
from wakeful.safety.assembly import Safety
from wakeful.safety.overview import safety_overview

MAX_BODY_BYTES = 8192
MAX_REASON_CHARS = 2000


def safety_routes(safety: Safety) -> list[Route]:
    api = _SafetyApi(safety)
    return [
        Route("/api/approvals", api.list, methods=["GET"]),
        Route("/api/approvals/{approval_id}", api.decide, methods=["POST"]),
        Route("/api/safety", api.overview, methods=["GET"]),
        Route("/api/sessions/{session}/taint/clear", api.clear_taint, methods=["POST"]),
        Route("/api/sessions/{session}/breaker/reset", api.reset_breaker, methods=["POST"]),
    ]


class _SafetyApi:
    def __init__(self, safety: Safety) -> None:
        self.safety = safety

    async def list(self, request: Request) -> Response:
        safety = self.safety
        everything = request.query_params.get("all", "") in ("1", "true", "yes")
        found = await (safety.approvals.all() if everything else safety.approvals.pending())
        return JSONResponse([approval.public() for approval in found])

    async def decide(self, request: Request) -> Response:
        safety = self.safety
        identifier = request.path_params["approval_id"]
        body = await read_json_object(request, MAX_BODY_BYTES)
        decision = body.get("decision")
        if decision not in ("approve", "deny", "answer"):
            raise ApiError(400, 'field \'decision\' must be "approve", "deny" or "answer"')
        # An answer to request_human_input comes as "answer"; "reason" for the others.
        reason = body.get("answer", "") if decision == "answer" else body.get("reason", "")
        if decision == "answer" and not (isinstance(reason, str) and reason.strip()):
            raise ApiError(400, "field 'answer' must be the text of your answer")
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            raise ApiError(400, f"field 'reason' must be text of at most {MAX_REASON_CHARS} chars")
        outcome, approval = await safety.approvals.decide(
            identifier, decision, reason=reason, by="owner"
        )
        if outcome is DecideOutcome.UNKNOWN or approval is None:
            raise ApiError(
                404,
                f"no approval {identifier!r}: mistyped, or decided long ago; "
                "`wakeful approvals` lists the pending ones",
            )
        if outcome is DecideOutcome.WRONG_KIND:
            wanted = (
                '{"decision": "answer", "answer": "..."}'
                if approval.kind == "input"
                else '"approve" or "deny"'
            )
            raise ApiError(400, f"approval {approval.id} takes {wanted}")
        if outcome is DecideOutcome.ALREADY:
            raise ApiError(409, already_decided(approval))
        return JSONResponse(approval.public())

    async def overview(self, request: Request) -> Response:
        return JSONResponse(await safety_overview(self.safety))

    async def clear_taint(self, request: Request) -> Response:
        safety = self.safety
        session = request.path_params["session"]
        was = await safety.taints.clear(session)
        return JSONResponse({"session": session, "was_tainted": was})

    async def reset_breaker(self, request: Request) -> Response:
        safety = self.safety
        session = request.path_params["session"]
        count = await safety.breaker.reset(session)
        return JSONResponse({"session": session, "denials_before": count})
