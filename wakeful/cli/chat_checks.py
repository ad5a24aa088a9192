"""Each chat credential asked of its platform by the channel's own client (Telegram
getMe, Slack auth.test, Matrix whoami): what `wakeful onboard` checks before it writes a
config and `wakeful doctor` checks of a config in use. A failure is one line saying what
failed; never the secret."""

from __future__ import annotations

import anyio
import httpx


class CheckFailed(Exception):
    """What failed, in one line (onboard shows it and asks again; doctor prints it)."""


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
