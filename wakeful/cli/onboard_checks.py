"""The live checks `wakeful onboard` makes before it writes anything: the model key by
doctor's own check (one GET of the model list: no tokens spent), the data directory by
doctor's, and each chat credential by the channel's own client (Telegram getMe, Slack
auth.test, Matrix whoami). A failure is one line saying what failed; never the secret.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
from pydantic import ValidationError

from wakeful.cli.doctor import data_dir_findings, model_finding
from wakeful.kernel.config_files import split_bind


class CheckFailed(Exception):
    """What failed, in one line (shown, then the question is asked again)."""


def check_model(base_url: str, model: str, api_key: str | None) -> str:
    """doctor's model check on these answers; its line when the endpoint took the key."""
    from wakeful.app.config import Settings
    from wakeful.llm.config import LlmSection

    # An empty api_key_env: no key was given, so none is taken from the environment.
    llm: dict[str, Any] = {"base_url": base_url, "model": model, "api_key_env": ""}
    llm["api_key"] = api_key
    try:
        # Only [llm], exactly as answered: Settings() would let WAKEFUL_LLM__* win.
        settings = Settings.model_construct(llm=LlmSection.model_validate(llm))
    except ValidationError as exc:
        raise CheckFailed(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
    finding, _skew = model_finding(settings)
    if not finding.ok:
        raise CheckFailed(finding.text)
    return finding.text


def check_data_dir(path: Path) -> str:
    """Made (only this user may enter it) if missing; doctor's check of it."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise CheckFailed(f"cannot create {path}: {exc.strerror or exc}") from None
    for finding in data_dir_findings(path):
        if not finding.ok:
            raise CheckFailed(f"{finding.text} (fix: {finding.fix})")
    return f"{path}: writable, private"


def check_bind(bind: str) -> str:
    try:
        split_bind(bind)
    except ValueError as exc:
        raise CheckFailed(f"{bind!r}: {exc}") from None
    return bind


def check_telegram(api_base: str, token: str) -> str:
    """The bot's @name, from getMe with this token."""
    from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable

    async def get_me() -> object:
        async with httpx.AsyncClient() as http:
            return await BotApi(api_base, token, http).call("getMe")

    try:
        me = anyio.run(get_me)
    except BotApiError as exc:  # its text is the method and Telegram's description only
        raise CheckFailed(f"Telegram refused the token ({exc})") from None
    except BotApiUnreachable as exc:
        raise CheckFailed(f"cannot reach {api_base} ({exc})") from None
    username = me.get("username") if isinstance(me, dict) else None
    return f"@{username}" if username else "a bot"


def check_slack(api_base: str, token: str) -> str:
    """The bot's user id and team, from auth.test with this token."""
    from wakeful.channels.slack.client import SlackClient
    from wakeful.core.outbox.channels import NeverDeliverable, TryLater

    async def auth_test() -> str:
        async with httpx.AsyncClient() as http:
            identity = await SlackClient(api_base, token, http).auth_test()
        return f"{identity.user_id} in {identity.team}" if identity.team else identity.user_id

    try:
        return anyio.run(auth_test)
    except (NeverDeliverable, TryLater) as exc:  # "Slack auth.test: invalid_auth"
        raise CheckFailed(f"Slack refused the token ({exc})") from None


def check_matrix(homeserver: str, token: str) -> str:
    """The account's user id, from whoami with this access token."""
    from wakeful.channels.matrix.api import MatrixApi, MatrixError

    async def whoami() -> str:
        api = MatrixApi(homeserver, access_token=token, timeout_s=10.0)
        try:
            return await api.whoami()
        finally:
            await api.aclose()

    try:
        return anyio.run(whoami)
    except MatrixError as exc:
        raise CheckFailed(f"{homeserver} refused the token ({exc})") from None
