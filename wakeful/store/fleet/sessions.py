"""Several daemons on one Redis prefix (``[store] fleet = true``): the store's side.

:class:`RedisFleet` is what one daemon of the fleet asks Redis: join, read the
events stream and its control stream (XREADGROUP BLOCK), route what it read
(own it, take it, or move it to its owner), renew its leases, adopt orphaned
sessions, give one up when it holds more than its share, claim what dead daemons
held, hand over at a stop. Every step is one script of
:mod:`~wakeful.store.fleet.session_scripts`. It also holds the
fencing tokens of the sessions this daemon owns, which the store puts on every
trajectory write (:meth:`RedisStore.consume`): the one place the check happens
is the write's script.

The daemon's side (the tasks that call these, the session loops they start
and stop) is :mod:`wakeful.app.fleet.member`.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from wakeful.store.base import StoreUnavailable

EVENTS = "events"
GROUP = "fleet"


@dataclass(frozen=True)
class FleetOptions:
    session_lease_ms: int = 10_000
    claim_idle_ms: int = 15_000
    max_deliveries: int = 5

    @property
    def heartbeat_s(self) -> float:
        """Often enough that a live daemon's lease never lapses and what it holds never
        idles past half the claim time (it refreshes entries idle for a quarter of it)."""
        return min(self.session_lease_ms / 3000, self.claim_idle_ms / 4000, 1.0)

    @property
    def refresh_idle_ms(self) -> int:
        return self.claim_idle_ms // 4


@dataclass(frozen=True)
class Routed:
    """What became of one delivered entry (see ``route`` in the scripts)."""

    entry: str
    session: str
    outcome: str  # mine | taken | forwarded | stale | dead
    detail: str  # taken: the fencing token; forwarded: the owner; dead: the reason


@dataclass(frozen=True)
class Control:
    """A message on this daemon's control stream: wake or cancel a session it owns."""

    op: str
    session: str
    cause: str
    stop_tools: bool
    event: str = ""  # cancel: the event that asked for it ('' if not known)


class NotInFleet(StoreUnavailable):
    """This daemon's control stream is gone: the others took it for dead (it was paused
    past its lease) and removed it. Joining again makes it a member anew."""


@dataclass(frozen=True)
class Delivery:
    routed: list[Routed]
    controls: list[Control]


# XREADGROUP's answer (RESP2, decoded): per stream, its entries as (id, fields).
StreamReply = list[tuple[str, list[tuple[str, dict[str, str] | None]]]] | None

Script = Callable[[str, Sequence[str | int]], Awaitable[Any]]


def new_daemon_id() -> str:
    """Names one daemon process for its life; a restarted daemon is a new member."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class RedisFleet:
    def __init__(self, prefix: str, options: FleetOptions, script: Script) -> None:
        self.prefix = prefix
        self.options = options
        self.me = new_daemon_id()
        self.url = ""  # where this daemon listens, for the registry (given by join)
        self.tokens: dict[str, str] = {}  # session -> fencing token, for the owned ones
        self._script = script
        self._started = time.time()

    def token_for(self, session: str) -> str:
        """The token a write for ``session`` carries ('' if not owned: refused)."""
        return self.tokens.get(session, "")

    def _info(self) -> str:
        info = {"pid": os.getpid(), "host": socket.gethostname(), "url": self.url}
        return json.dumps({**info, "started": self._started, "sessions": len(self.tokens)})

    async def join(self, url: str) -> None:
        """Register in the fleet, listening at ``url`` (again after being taken for dead)."""
        self.url = url
        await self._script("FLEET_JOIN", [self.me, self._info(), self.options.session_lease_ms])

    async def read(self, client: Redis, block_ms: int) -> Delivery:
        """Wait up to ``block_ms`` for new entries and control messages; route the entries.

        ``client``: a connection of the caller's own (``RedisStore.reader``), since the
        read blocks. Redis's errors come out as the store's: :class:`NotInFleet` when
        this daemon's control stream is gone (join again), else ``StoreUnavailable``."""
        try:
            return await self._read(client, block_ms)
        except ResponseError as exc:
            if "NOGROUP" in str(exc):
                raise NotInFleet(f"daemon {self.me} is no member of the fleet: {exc}") from exc
            raise StoreUnavailable(f"cannot read the fleet's streams: {exc}") from exc
        except RedisError as exc:
            raise StoreUnavailable(f"cannot read the fleet's streams: {exc}") from exc

    async def _read(self, client: Redis, block_ms: int) -> Delivery:
        streams = {f"{self.prefix}{EVENTS}": ">", f"{self.prefix}ctl:{self.me}": ">"}
        read = client.xreadgroup(GROUP, self.me, cast(Any, streams), count=256, block=block_ms)
        replies = cast(StreamReply, await read)
        triples: list[str] = []
        controls: list[Control] = []
        acks: list[str] = []
        for stream, entries in replies or []:
            for entry_id, fields in entries:
                if stream.endswith(f"ctl:{self.me}"):
                    acks.append(entry_id)
                    controls.append(_control(fields or {}))
                else:
                    fields = fields or {}
                    triples += [entry_id, fields.get("id", ""), fields.get("session", "")]
        if acks:
            await client.xack(f"{self.prefix}ctl:{self.me}", GROUP, *acks)
        routed = await self.route(triples) if triples else []
        return Delivery(routed, controls)

    async def route(self, triples: list[str]) -> list[Routed]:
        rows = await self._script("FLEET_ROUTE", [self.me, self.options.session_lease_ms, *triples])
        return self._settle(rows)

    def _settle(self, rows: list[list[str]]) -> list[Routed]:
        routed = [Routed(*(str(v) for v in row)) for row in rows]
        for item in routed:
            if item.outcome == "taken":
                self.tokens[item.session] = item.detail
        return routed

    async def claim_stale(self) -> list[Routed]:
        """Entries idle past ``claim_idle_ms`` (their daemon died or stalled), routed."""
        o = self.options
        rows = await self._script(
            "FLEET_CLAIM_STALE",
            [self.me, o.session_lease_ms, o.claim_idle_ms, o.max_deliveries, repr(time.time())],
        )
        return self._settle(rows)

    async def renew(self) -> list[str]:
        """The heartbeat: renew the registration and the leases; the sessions lost."""
        pairs = [v for session, token in self.tokens.items() for v in (session, token)]
        o = self.options
        lost = [
            str(s)
            for s in await self._script(
                "FLEET_RENEW",
                [self.me, o.session_lease_ms, self._info(), o.refresh_idle_ms, *pairs],
            )
        ]
        for session in lost:
            self.tokens.pop(session, None)
        return lost

    async def adopt(self) -> list[str]:
        """Take orphaned sessions up to this daemon's fair share; the ones taken."""
        flat = await self._script("FLEET_ADOPT", [self.me, self.options.session_lease_ms])
        taken = []
        for i in range(0, len(flat), 2):
            session = str(flat[i])
            self.tokens[session] = str(flat[i + 1])
            taken.append(session)
        return taken

    def let_go(self, session: str) -> None:
        """Forget a session's token (its loop ended: its lease was lost)."""
        self.tokens.pop(session, None)

    async def hand_over(self) -> int:
        """End this daemon's leases and put what it holds back in the stream; entries moved."""
        self.tokens.clear()
        return int(await self._script("FLEET_HAND_OVER", [self.me]))

    async def over_share(self) -> bool:
        """This daemon should give one session up: it holds more than its fair share and
        another live daemon holds at least two fewer. Both conditions keep sessions from
        bouncing: the one that takes it stays within its share (so it never gives back),
        and a one-session difference (3/2 over 5) is left as it is."""
        mine, fair, fewest = (
            int(v) for v in await self._script("FLEET_SHARE", [self.me, len(self.tokens)])
        )
        return mine > fair and 0 <= fewest <= mine - 2

    async def give_up(self, session: str) -> int:
        """End this daemon's lease on one session (its loop already ended here) and put
        the entries it held for it back in the stream; the entries moved."""
        self.tokens.pop(session, None)
        return int(await self._script("FLEET_GIVE_UP", [self.me, session]))

    async def tell_owner(
        self, session: str, op: str, cause: str, stop_tools: bool, event_id: str = ""
    ) -> str | None:
        """A control message to the session's owner; the owner, or None if it has none."""
        owner = await self._script(
            "FLEET_TELL_OWNER", [session, op, cause, "1" if stop_tools else "", event_id]
        )
        return str(owner) if owner else None

    async def trim(self) -> int:
        return int(await self._script("FLEET_TRIM", []))

    async def status(self, dead_shown: int = 10) -> dict[str, Any]:
        status: dict[str, Any] = json.loads(await self._script("FLEET_STATUS", [dead_shown]))
        for row in status.get("daemons", {}).values():
            info = row.get("info")
            row["info"] = json.loads(info) if isinstance(info, str) else {}
            if not isinstance(row.get("sessions"), list):
                row["sessions"] = []  # cjson writes an empty Lua table as {}
        dead = status.get("dead", {})
        if not isinstance(dead.get("newest"), list):
            dead["newest"] = []
        return {"me": self.me, **status}


def _control(fields: dict[str, str]) -> Control:
    return Control(
        op=fields.get("op", ""),
        session=fields.get("session", ""),
        cause=fields.get("cause", ""),
        stop_tools=bool(fields.get("stop_tools")),
        event=fields.get("event", ""),
    )
