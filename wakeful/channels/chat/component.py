"""The owner's side of pairing: list the pending codes, approve or deny one.

``GET /api/pairing`` and ``POST /api/pairing/{platform}/{code}`` (body
``{"decision": "approve" | "deny"}``, approve by default), behind the admin
token; `wakeful pairing` and the web page call them. An approved user is told
so on their platform, through the outbox like every message.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskStatus
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wakeful.channels.chat.inbound import PAIRED_TEXT
from wakeful.channels.chat.pairing import Pairing, display_code, normalize_code
from wakeful.channels.chat.platforms import PLATFORMS
from wakeful.core.components.context import ComponentSetup, SendMessage
from wakeful.kernel.http.body import read_json_object
from wakeful.kernel.http.errors import ApiError
from wakeful.store.outbox.record import NewMessage

log = structlog.get_logger(__name__)

MAX_BODY_BYTES = 4096


class PairingComponent:
    name = "chat.pairing"

    def __init__(self) -> None:
        self._pairing: Pairing | None = None
        self._send: SendMessage | None = None

    async def configure(self, setup: ComponentSetup) -> None:
        self._pairing = Pairing(setup.state)
        self._send = setup.send_message
        setup.add_admin_route(Route("/api/pairing", self.pending, methods=["GET"]))
        setup.add_admin_route(
            Route("/api/pairing/{platform}/{code}", self.decide, methods=["POST"])
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # nothing runs: the routes are the whole component

    async def pending(self, request: Request) -> Response:
        assert self._pairing is not None
        requests = await self._pairing.pending()
        return JSONResponse({"pending": [r.to_json() for r in requests]})

    async def decide(self, request: Request) -> Response:
        assert self._pairing is not None and self._send is not None
        platform, code = request.path_params["platform"], request.path_params["code"]
        if platform not in PLATFORMS:
            raise ApiError(404, f"unknown platform {platform!r}: one of {', '.join(PLATFORMS)}")
        body = await read_json_object(request, MAX_BODY_BYTES) if await _has_body(request) else {}
        decision = body.get("decision", "approve")
        if decision not in ("approve", "deny"):
            raise ApiError(400, 'field \'decision\' must be "approve" or "deny"')
        found = await self._pairing.decide(platform, code, approve=decision == "approve")
        if found is None:
            raise ApiError(
                404,
                f"no pending pairing code {display_code(normalize_code(code))} on {platform}: "
                "it was decided already, expired (codes last a day) or mistyped; "
                "`wakeful pairing list` shows the pending ones",
            )
        log.info(
            f"chat user {decision}d",
            platform=platform,
            account=found.name,
            user=found.user_id,
            user_name=found.user_name,
        )
        if decision == "approve":
            channel = f"chat:{platform}:{found.name}"
            key = f"pairing:approved:{platform}:{found.name}:{found.user_id}:{found.code}"
            await self._send(
                NewMessage(found.session, channel, PAIRED_TEXT, key, address=found.address)
            )
        return JSONResponse({"decision": decision, "request": found.to_json()})


async def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return length is not None and length != "0"
