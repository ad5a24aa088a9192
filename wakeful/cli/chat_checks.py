"""Each chat credential asked of its platform by the channel's own client (Telegram
getMe, Slack auth.test, Matrix whoami, Discord /users/@me, WhatsApp's phone number,
signal-cli's version, an XMPP log-in, an IRC registration): what `wakeful onboard`
checks before it writes a config and `wakeful doctor` checks of a config in use. A failure
is one line saying what failed; never the secret. Each is bounded in time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import httpx

from wakeful.kernel.config_files import read_secret_file

if TYPE_CHECKING:  # the channel packages are imported only when a check runs
    from wakeful.channels.irc.config import IrcConfig
    from wakeful.channels.xmpp.config import XmppConfig


T = TypeVar("T")


class CheckFailed(Exception):
    """What failed, in one line (onboard shows it and asks again; doctor prints it)."""


CHECK_TIMEOUT_S = 20.0  # a server that neither answers nor refuses: a failure, not a hang


def _bounded(what: str, call: Callable[[], Awaitable[T]]) -> T:
    """``call`` run to its end within CHECK_TIMEOUT_S; a CheckFailed naming ``what`` if not."""

    async def run() -> T:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            return await call()

    try:
        return anyio.run(run)
    except TimeoutError:
        raise CheckFailed(f"{what} did not answer within {CHECK_TIMEOUT_S:g} s") from None


def check_telegram(api_base: str, token: str) -> str:
    """The bot's @name, from getMe with this token."""
    from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable

    async def get_me() -> object:
        async with httpx.AsyncClient() as http:
            return await BotApi(api_base, token, http).call("getMe")

    try:
        me = _bounded(api_base, get_me)
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
        return _bounded(api_base, auth_test)
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
        return _bounded(homeserver, whoami)
    except MatrixError as exc:
        raise CheckFailed(f"{homeserver} refused the token ({exc})") from None


def check_discord(api_base: str, token: str) -> str:
    """The bot's user name, from GET /users/@me with this bot token."""
    from wakeful.channels.discord.rest import DiscordRest, RateLimited, RestError, RestUnreachable

    async def users_me() -> str:
        async with httpx.AsyncClient() as http:
            me = await DiscordRest(api_base, token, http).call("GET", "/users/@me")
        name = me.get("username") if isinstance(me, dict) else None
        return str(name) if name else "a bot"

    try:
        return _bounded(api_base, users_me)
    except RestError as exc:  # "HTTP 401: 401: Unauthorized": Discord's message, not the token
        raise CheckFailed(f"Discord refused the token ({exc})") from None
    except (RestUnreachable, RateLimited) as exc:
        raise CheckFailed(f"cannot ask {api_base} ({exc})") from None


def check_whatsapp(api_base: str, version: str, phone_number_id: str, token: str) -> str:
    """The business number and its name, from GET /{version}/{phone_number_id}."""
    from wakeful.channels.whatsapp.client import WhatsAppClient
    from wakeful.core.outbox.channels import NeverDeliverable, TryLater

    async def number() -> str:
        async with httpx.AsyncClient() as http:
            client = WhatsAppClient(api_base, version, phone_number_id, token, http, _ignore)
            answer = await client.check_credentials()
        shown = answer.get("display_phone_number") or phone_number_id
        name = answer.get("verified_name")
        return f"{shown} ({name})" if name else str(shown)

    try:
        return _bounded(api_base, number)
    except (NeverDeliverable, TryLater) as exc:  # the Graph API's code and message only
        raise CheckFailed(str(exc)) from None


def _ignore(_: object) -> None:
    """A check has no component health to report to."""


def check_signal(url: str, account: str | None, token: str | None) -> str:
    """signal-cli's version, from the daemon at ``url``, asked for ``account``: a daemon
    serving several accounts refuses an account it has not registered ("Specified account
    does not exist"); one started with ``-a`` serves only its own, registered one."""
    from wakeful.channels.signal.api import SignalApi, SignalError
    from wakeful.channels.signal.socket_api import SignalSocketApi

    async def version() -> str:
        if url.startswith(("http://", "https://")):
            api = SignalApi(url, account=account, token=token)
            try:
                answer = await api.call("version", {})
            finally:
                await api.aclose()
        else:  # tcp:// or unix://: answers come on the connection's own reader
            answer = await SignalSocketApi(url, account=account).call_alone("version", {})
        found = answer.get("version") if isinstance(answer, dict) else None
        return f"{account or 'its account'} on signal-cli {found or '(version unknown)'}"

    try:
        return _bounded(url, version)
    except SignalError as exc:
        raise CheckFailed(f"the signal-cli daemon at {url} refused ({exc})") from None


def check_xmpp(config: XmppConfig, password: str) -> str:
    """The account's JID, after the channel's own connection logged in and out."""
    from wakeful.channels.xmpp.connection import XmppConnection, XmppUnavailable

    async def log_in() -> str:
        connection = XmppConnection(config, password, on_message=lambda: None)
        try:
            await connection.open()
        finally:
            with anyio.CancelScope(shield=True):  # a timed-out log-in is still closed
                await connection.close()
        return config.full_jid

    try:
        return _bounded(config.server or config.jid, log_in)
    except XmppUnavailable as exc:  # slixmpp's reason: never the password
        raise CheckFailed(f"{config.jid}: {exc}") from None


def check_irc(config: IrcConfig, sasl_password: str | None, server_password: str | None) -> str:
    """The nick the server registered, after the channel's own registration (and SASL
    when configured) and a QUIT."""
    from wakeful.channels.irc.connection import IrcConnection, IrcError, Login

    login = Login.of(config, sasl_password, server_password)

    async def register() -> str:
        async with IrcConnection.open(
            config.server, config.port, tls=config.tls, login=login
        ) as connection:
            return f"{connection.nick} on {config.server}:{config.port}"

    try:
        return _bounded(f"{config.server}:{config.port}", register)
    except IrcError as exc:
        raise CheckFailed(str(exc)) from None


# --- the one table of platforms and their checks: doctor's and onboard's ------------------


@dataclass(frozen=True)
class TokenCheck:
    """A platform whose credential is one token in a file: onboard asks it of the token it
    was just given (before any file exists), doctor of the file's."""

    token_key: str  # the account's key naming the token's file
    ask: Callable[[Any, str], str]  # (the account's settings, the token) → what it said

    def fix(self, account: Any) -> str:
        return f"put a valid credential in {getattr(account, self.token_key)}"

    def configured(self, account: Any, where: str) -> Callable[[], str] | None:
        """The check of a configured account, its token read from its file; None without
        one (a Matrix account that logs in with a password: a log-in would make a new
        session, so the daemon's own start proves it)."""
        path = getattr(account, self.token_key)
        if path is None:
            return None
        return lambda: self.ask(account, read_secret_file(path, f"{where}.{self.token_key}"))


@dataclass(frozen=True)
class AccountCheck:
    """A platform whose account reads its own secrets (several, or none)."""

    ask: Callable[[Any], str]  # the account's settings → what it said
    fix: Callable[[Any], str]  # the line saying what to change

    def configured(self, account: Any, where: str) -> Callable[[], str] | None:
        return partial(self.ask, account)


# Every [chat] platform (a test holds it to ChatSection), in the order doctor reports them.
CHAT_CHECKS: dict[str, TokenCheck | AccountCheck] = {
    "telegram": TokenCheck(
        "bot_token_file", lambda bot, token: check_telegram(bot.api_base, token)
    ),
    "slack": TokenCheck("bot_token_file", lambda app, token: check_slack(app.api_base, token)),
    "matrix": TokenCheck(
        "access_token_file", lambda account, token: check_matrix(account.homeserver, token)
    ),
    "discord": TokenCheck("bot_token_file", lambda bot, token: check_discord(bot.api_base, token)),
    "whatsapp": TokenCheck(
        "access_token_file",
        lambda number, token: check_whatsapp(
            number.api_base, number.api_version, number.phone_number_id, token
        ),
    ),
    "signal": AccountCheck(
        lambda account: check_signal(account.url, account.account, account.auth_token()),
        lambda _: "start signal-cli's daemon at url with this account registered (docs/signal.md)",
    ),
    "xmpp": AccountCheck(
        lambda account: check_xmpp(account, account.password()),
        lambda account: (
            f"check jid and server, and put the account's password in {account.password_file}"
        ),
    ),
    "irc": AccountCheck(
        lambda account: check_irc(account, account.sasl_password(), account.server_password()),
        lambda _: (
            "check server, port, tls and the passwords in sasl_password_file / "
            "server_password_file (docs/irc.md)"
        ),
    ),
}
