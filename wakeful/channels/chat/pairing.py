"""Pairing: how an unknown chat user is let in by the owner, never by themselves.

An unknown sender's message never reaches the model. They get a one-time code;
the owner approves it (`wakeful pairing approve telegram ABCD-EFGH`, or on the
web page) and from then on that user is allowed like one in the config's list.
Codes and paired users are kept in the store's channel state, so they outlive a
restart and are shared by every daemon on one store.

At most ``MAX_PENDING`` requests wait at once (all platforms): a stranger who
writes when that many are waiting is not answered and gets no code, with one
warning per burst in the log. The new one is refused, not the oldest dropped:
a code already sent may be the one the owner is about to approve, and a flood
of fresh accounts must not push it out. Expired requests are deleted when a
new one is counted, so the state cannot grow without bound either.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass

import structlog

from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

# No 0/O, 1/I/L: a code is read off a phone and typed into a terminal.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_S = 24 * 3600  # long enough for the owner to see it the next morning
REMIND_EVERY_S = 600  # an unknown sender is told the code again at most this often
MAX_PENDING = 100  # live requests waiting at once; more strangers are not answered
CAP_NOTICE_EVERY_S = 600.0  # the "at the cap" warning, at most once per this long


@dataclass(frozen=True)
class PairingRequest:
    platform: str
    name: str  # the account (config entry) the user wrote to
    code: str
    user_id: str
    user_name: str | None
    address: str  # where the "you are paired" message goes
    session: str  # where the user's messages will go once paired
    requested_at: float
    reminded_at: float

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "code": display_code(self.code)}


def normalize_code(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum())


def display_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}"


def code_key(platform: str, code: str) -> str:
    return f"pairing:code:{platform}:{code}"


def pending_key(platform: str, name: str, user_id: str) -> str:
    return f"pairing:pending:{platform}:{name}:{user_id}"


def _paired_key(platform: str, name: str, user_id: str) -> str:
    return f"pairing:paired:{platform}:{name}:{user_id}"


def _denied_key(platform: str, name: str, user_id: str) -> str:
    return f"pairing:denied:{platform}:{name}:{user_id}"


class Pairing:
    """Pending codes and paired users of every platform, in channel state."""

    def __init__(self, state: ChannelState) -> None:
        self._state = state
        self._cap_noticed_at = -CAP_NOTICE_EVERY_S
        self.refused = 0  # strangers not answered because of the cap (this process)

    async def is_paired(self, platform: str, name: str, user_id: str) -> bool:
        return await self._state.get_state(_paired_key(platform, name, user_id)) is not None

    async def is_denied(self, platform: str, name: str, user_id: str) -> bool:
        """The owner said no: such a sender is not answered at all any more."""
        return await self._state.get_state(_denied_key(platform, name, user_id)) is not None

    async def request(
        self,
        *,
        platform: str,
        name: str,
        user_id: str,
        user_name: str | None,
        address: str,
        session: str,
    ) -> tuple[PairingRequest, bool] | None:
        """The user's pending request (a new one if none is live) and whether to
        tell them the code now (new, or not told for a while); None when
        ``MAX_PENDING`` others wait already (see the module's docstring)."""
        now = time.time()
        pending = await self._live(platform, name, user_id, now)
        if pending is not None:
            if now - pending.reminded_at < REMIND_EVERY_S:
                return pending, False
            pending = PairingRequest(**{**asdict(pending), "reminded_at": now})
        else:
            if await self._live_count(now) >= MAX_PENDING:
                self._refuse(platform, name, user_id, now)
                return None
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            pending = PairingRequest(
                platform, name, code, user_id, user_name, address, session, now, now
            )
            await self._state.put_state(pending_key(platform, name, user_id), code)
        await self._state.put_state(code_key(platform, pending.code), json.dumps(asdict(pending)))
        return pending, True

    async def _live(
        self, platform: str, name: str, user_id: str, now: float
    ) -> PairingRequest | None:
        code = await self._state.get_state(pending_key(platform, name, user_id))
        if code is None:
            return None
        found = await self._get(platform, code)
        if found is None or now - found.requested_at > CODE_TTL_S:
            return None
        return found

    async def _live_count(self, now: float) -> int:
        """Live requests; deletes the expired ones it meets (and their user's pointer)."""
        live = 0
        for key, raw in (await self._state.states_under("pairing:code:")).items():
            found = PairingRequest(**json.loads(raw))
            if now - found.requested_at <= CODE_TTL_S:
                live += 1
                continue
            await self._state.put_state(key, None)
            pointer = pending_key(found.platform, found.name, found.user_id)
            if await self._state.get_state(pointer) == found.code:
                await self._state.put_state(pointer, None)
        return live

    def _refuse(self, platform: str, name: str, user_id: str, now: float) -> None:
        self.refused += 1
        if now - self._cap_noticed_at < CAP_NOTICE_EVERY_S:
            return
        self._cap_noticed_at = now
        log.warning(
            f"{MAX_PENDING} pairing requests are waiting: new strangers get no code and "
            "no answer until some are approved or denied (`wakeful pairing list`)",
            platform=platform,
            account=name,
            user=user_id,
            fix="approve or deny the waiting codes; they also expire after 24 h",
        )

    async def _get(self, platform: str, code: str) -> PairingRequest | None:
        raw = await self._state.get_state(code_key(platform, code))
        return None if raw is None else PairingRequest(**json.loads(raw))

    async def pending(self) -> list[PairingRequest]:
        now = time.time()
        found = [
            PairingRequest(**json.loads(raw))
            for raw in (await self._state.states_under("pairing:code:")).values()
        ]
        live = [r for r in found if now - r.requested_at <= CODE_TTL_S]
        return sorted(live, key=lambda r: r.requested_at)

    async def decide(self, platform: str, code: str, *, approve: bool) -> PairingRequest | None:
        """Approve (the user is allowed from now on) or deny a pending code; None
        when no such live code exists on that platform."""
        code = normalize_code(code)
        found = await self._get(platform, code)
        if found is None or time.time() - found.requested_at > CODE_TTL_S:
            return None
        record = json.dumps({"user_name": found.user_name, "decided_at": time.time()})
        key = _paired_key if approve else _denied_key
        await self._state.put_state(key(platform, found.name, found.user_id), record)
        await self._state.put_state(code_key(platform, code), None)
        await self._state.put_state(pending_key(platform, found.name, found.user_id), None)
        return found
