"""`wakeful onboard`: a guided first run, from nothing to a config `wakeful run` starts with.

Interactive (a terminal): one question at a time, the default in brackets (Enter takes
it), each answer checked live before the next question (the model key by doctor's check,
a chat credential by its platform's own client) and asked again, with a one-line reason,
when the check fails. Nothing is written until the end: the config (``wakeful init``'s
template with the answers in it) and each secret in a mode-0600 file beside it, named
by the config. Secrets are read without echo and never printed; nor is the admin token:
the web page's link carries a one-time code.

``--non-interactive`` (scripts, containers): flags, else the daemon's own
``WAKEFUL_<SECTION>__<KEY>`` environment, else the defaults; the model key from
``$OPENAI_API_KEY``, chat tokens from their ``$..._TOKEN`` variables. Something required
missing is exit 2 with one line naming it; a failed check is exit 1.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from wakeful.cli import onboard_checks as checks
from wakeful.cli import onboard_unit as unit
from wakeful.cli.client import CliError
from wakeful.cli.onboard_args import (
    DEFAULT_DISCORD_API,
    DEFAULT_SLACK_API,
    DEFAULT_TELEGRAM_API,
    KEY_ENV,
    OPENAI_BASE_URL,
    SUGGESTED_MODEL,
    TOKEN_ENV,
)
from wakeful.cli.onboard_config import (
    Answers,
    ChatAccount,
    write_all,
)
from wakeful.kernel.config_files import ConfigError, config_search_path, find_config_file


class Stop(Exception):
    """The person stopped (Ctrl-D, or declined to replace the config): nothing written."""


def target_config(given: str | None) -> Path:
    """``-c FILE``, else ``$WAKEFUL_CONFIG``, else the config `wakeful run` would find now
    (running onboard again edits the one in use), else $XDG_CONFIG_HOME/wakeful/wakeful.toml
    (the user unit's)."""
    named = given or os.environ.get("WAKEFUL_CONFIG")
    if named:
        return Path(named).expanduser()
    return find_config_file(None) or config_search_path()[1]


def run(args: argparse.Namespace) -> int:
    config = target_config(args.config)
    if args.non_interactive:
        return _non_interactive(args, config)
    if not sys.stdin.isatty():
        raise CliError(
            "onboard asks questions on a terminal; without one, use --non-interactive "
            "(flags and WAKEFUL_* environment)",
            exit_code=2,
        )
    try:
        return Interview(config).run()
    except (Stop, EOFError):
        print("\nstopped; nothing was written")
        return 1


# --- the defaults: an existing config, else the environment, else the built-in ----------


def _current(config: Path | None) -> Any:
    """The settings `wakeful run` would use: the config (when there is one) and the
    WAKEFUL_* environment over the defaults."""
    from wakeful.app.config import load_settings

    return load_settings(config if config is not None and config.is_file() else None)


# --- interactive --------------------------------------------------------------------------


@dataclass
class Interview:
    config: Path

    def run(self) -> int:
        print("Setting up wakeful. Enter takes the [default]; Ctrl-C stops, writing nothing.")
        if self.config.exists() and not self.yes(
            f"{self.config} exists. Replace it", default=False
        ):
            print(f"left {self.config} as it is")
            return 1
        print(f"The config will be {self.config}.\n")
        try:
            current = _current(self.config)
        except ConfigError as exc:  # the file being replaced is broken: offer the defaults
            print(f"({self.config} does not load: {exc}; the defaults are offered)")
            current = _current(None)
        answers = self.model(current)
        answers.data_dir = self.ask_checked(
            "Data directory (events, conversations, the admin token)",
            str(current.daemon.data_dir_path()),
            lambda text: checks.check_data_dir(Path(text).expanduser()),
            Path,
        )
        answers.bind = self.ask_checked(
            "Web page and API address (HOST:PORT)", current.server.bind, checks.check_bind, str
        )
        answers.chats = self.chats(_kept_chats(current) if self.config.is_file() else [])
        written = write_all(self.config, answers)
        return finish(self.config, answers, written, self.wants_service())

    # Each question ------------------------------------------------------------------------

    def model(self, current: Any) -> Answers:
        print("The model: any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama).")
        base_url = current.llm.base_url or OPENAI_BASE_URL
        model = current.llm.model or (SUGGESTED_MODEL if base_url == OPENAI_BASE_URL else "")
        key = _current_key(current)
        key_origin = _key_origin(current)
        while True:
            base_url = self.ask("Model server base URL", base_url)
            model = self.ask("Model name", model)
            if not model:
                print("  a model name is needed (the server's list of models has them)")
                continue
            typed = self.secret(f"API key for {base_url}", f"the {key_origin}" if key else "none")
            if typed:
                key, key_origin = typed, "one just typed"
            try:
                said = checks.check_model(base_url, model, key)
            except checks.CheckFailed as exc:
                print(f"  failed: {exc}")
                continue
            print(f"  ok: {said}")
            return Answers(base_url, model, key, Path(), "")

    def chats(self, old: list[ChatAccount]) -> list[ChatAccount]:
        chats = [
            chat
            for chat in old
            if self.yes(f"Keep {chat.platform} account {chat.name!r}", default=True)
        ]
        # Each platform: how its account is asked for, and its first account's default name.
        platforms: dict[str, tuple[Callable[[str], ChatAccount], str]] = {
            "telegram": (self.telegram, "tg"),
            "slack": (self.slack, "work"),
            "matrix": (self.matrix, "mx"),
            "discord": (self.discord, "dc"),
        }
        print("\nChat apps: the agent answers you there (Enter: none, or no more).")
        while True:
            choice = self.ask("Add a chat app: telegram, slack, matrix or discord", "none").lower()
            if choice in ("", "none", "no", "n"):
                return chats
            if choice not in platforms:
                print(f"  {choice!r} is not one of telegram, slack, matrix, discord, none")
                continue
            add, default = platforms[choice]
            names = {c.name for c in chats if c.platform == choice}
            name = default if default not in names else f"{default}{len(names) + 1}"
            chats.append(add(name))

    def telegram(self, name: str) -> ChatAccount:
        api = self.ask("Telegram Bot API server", DEFAULT_TELEGRAM_API)
        token, bot = self.checked_secret(
            "Bot token from @BotFather", lambda token: checks.check_telegram(api, token)
        )
        print(f"  ok: the bot is {bot}")
        users = self.ask_checked(
            "Your Telegram user id(s), comma-separated (others get a pairing code)",
            "",
            _ints,
            _ints,
        )
        keys: dict[str, Any] = {"allowed_user_ids": users}
        if api != DEFAULT_TELEGRAM_API:
            keys["api_base"] = api
        return ChatAccount("telegram", name, keys, {"bot_token_file": token}, bot)

    def slack(self, name: str) -> ChatAccount:
        api = self.ask("Slack Web API", DEFAULT_SLACK_API)
        token, bot = self.checked_secret(
            "Bot User OAuth Token (xoxb-...)", lambda token: checks.check_slack(api, token)
        )
        print(f"  ok: the bot is {bot}")
        signing = ""
        while not signing:
            signing = self.secret("Signing Secret (Basic Information, App Credentials)", "")
        users = _words(self.ask("Your Slack member id(s), comma-separated", ""))
        keys: dict[str, Any] = {"allowed_user_ids": users}
        if api != DEFAULT_SLACK_API:
            keys["api_base"] = api
        secrets = {"bot_token_file": token, "signing_secret_file": signing}
        return ChatAccount("slack", name, keys, secrets, bot)

    def matrix(self, name: str) -> ChatAccount:
        homeserver = ""
        while not homeserver.startswith(("http://", "https://")):
            homeserver = self.ask("Homeserver URL (https://...)", "")
        token, user_id = self.checked_secret(
            "The account's access token", lambda token: checks.check_matrix(homeserver, token)
        )
        print(f"  ok: logged in as {user_id}")
        users = _words(self.ask("Matrix users it answers, comma-separated", ""))
        keys: dict[str, Any] = {"homeserver": homeserver, "user_id": user_id}
        keys["allowed_users"] = users
        return ChatAccount("matrix", name, keys, {"access_token_file": token}, user_id)

    def discord(self, name: str) -> ChatAccount:
        api = self.ask("Discord REST API", DEFAULT_DISCORD_API)
        token, bot = self.checked_secret(
            "Bot token (Developer Portal, Bot page)", lambda token: checks.check_discord(api, token)
        )
        print(f"  ok: the bot is {bot}")
        users = self.ask_checked(
            "Your Discord user id(s), comma-separated (others get a pairing code)",
            "",
            _snowflakes,
            _words,
        )
        keys: dict[str, Any] = {"allowed_user_ids": users}
        if api != DEFAULT_DISCORD_API:
            keys["api_base"] = api
        return ChatAccount("discord", name, keys, {"bot_token_file": token}, bot)

    def wants_service(self) -> bool:
        return self.yes("\nInstall and start the systemd user service", default=False)

    # Asking -------------------------------------------------------------------------------

    def ask(self, question: str, default: str) -> str:
        answer = input(f"{question} [{default}]: ").strip()
        return answer or default

    def ask_checked(
        self,
        question: str,
        default: str,
        check: Callable[[str], object],
        convert: Callable[[str], Any],
    ) -> Any:
        while True:
            answer = self.ask(question, default)
            try:
                check(answer)
            except checks.CheckFailed as exc:
                print(f"  failed: {exc}")
                continue
            return convert(answer)

    def secret(self, question: str, default: str) -> str:
        """Read without echo; '' when Enter takes the default (which is never the secret)."""
        while True:
            answer = getpass.getpass(f"{question} (not shown) [{default or 'none'}]: ").strip()
            if answer or default:
                return answer
            print("  this one is needed")

    def checked_secret(self, question: str, check: Callable[[str], str]) -> tuple[str, str]:
        """A secret asked until ``check`` accepts it: the secret and what the check said."""
        while True:
            secret = self.secret(question, "")
            try:
                return secret, check(secret)
            except checks.CheckFailed as exc:
                print(f"  failed: {exc}")

    def yes(self, question: str, *, default: bool) -> bool:
        answer = self.ask(f"{question}? (y/n)", "y" if default else "n").lower()
        return answer in ("y", "yes")


def _current_key(current: Any) -> str | None:
    try:
        key: str | None = current.llm.resolve_api_key()
    except ConfigError:  # its file is gone: ask for the key
        return None
    return key


def _kept_chats(current: Any) -> list[ChatAccount]:
    """The chat accounts of the config being replaced, as they are (their secret files
    stay where they are and are named again)."""
    kept = []
    for platform in ("telegram", "slack", "matrix", "discord"):
        for entry in getattr(current.chat, platform):
            keys = entry.model_dump(mode="json", exclude_defaults=True, exclude={"name"})
            kept.append(ChatAccount(platform, entry.name, keys))
    return kept


def _key_origin(current: Any) -> str:
    llm = current.llm
    if llm.api_key_file is not None:
        return f"key in {llm.api_key_file}"
    return f"key in ${llm.api_key_env}" if llm.api_key_env else "key in the config"


def _snowflakes(text: str) -> list[str]:
    ids = _words(text)
    bad = [i for i in ids if not i.isdigit()]
    if bad:
        raise checks.CheckFailed(
            f"{bad[0]!r} is not a Discord user id (digits; Developer Mode → Copy User ID)"
        )
    return ids


def _words(text: str) -> list[str]:
    return [word for word in text.replace(",", " ").split() if word]


def _ints(text: str) -> list[int]:
    try:
        return [int(word) for word in _words(text)]
    except ValueError:
        raise checks.CheckFailed("user ids are numbers, e.g. 123456789") from None


# --- non-interactive -------------------------------------------------------------------------


def _non_interactive(args: argparse.Namespace, config: Path) -> int:
    if config.exists() and not args.force:
        raise CliError(f"{config} exists; --force replaces it", exit_code=1)
    current = _current(None)  # flags over the environment over the defaults; no old file
    llm = current.llm
    model = args.model or llm.model
    if not model:
        _missing("the model: --model NAME or WAKEFUL_LLM__MODEL")
    answers = Answers(
        base_url=args.base_url or llm.base_url,
        model=model,
        api_key=os.environ.get(KEY_ENV) or None,
        data_dir=Path(args.data_dir or current.daemon.data_dir_path()).expanduser(),
        bind=args.bind or current.server.bind,
        chats=_chat_flags(args),
    )
    if args.no_check and args.matrix_homeserver:
        _missing("a live check for Matrix (its user id comes from whoami): drop --no-check")
    if not args.no_check:
        _check_all(answers)
    written = write_all(config, answers)
    return finish(config, answers, written, args.systemd)


def _missing(what: str) -> None:
    raise CliError(f"onboard --non-interactive needs {what}", exit_code=2)


def _env_secret(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        _missing(f"${name}")
    return value


def _chat_flags(args: argparse.Namespace) -> list[ChatAccount]:
    chats = []
    if args.telegram:
        keys: dict[str, Any] = {"allowed_user_ids": args.telegram_user}
        if args.telegram_api != DEFAULT_TELEGRAM_API:
            keys["api_base"] = args.telegram_api.rstrip("/")
        secrets = {"bot_token_file": _env_secret(TOKEN_ENV["telegram"])}
        chats.append(ChatAccount("telegram", "tg", keys, secrets))
    if args.slack:
        keys = {"allowed_user_ids": args.slack_user}
        if args.slack_api != DEFAULT_SLACK_API:
            keys["api_base"] = args.slack_api.rstrip("/")
        secrets = {
            "bot_token_file": _env_secret(TOKEN_ENV["slack"]),
            "signing_secret_file": _env_secret(TOKEN_ENV["slack_signing"]),
        }
        chats.append(ChatAccount("slack", "work", keys, secrets))
    if args.matrix_homeserver:
        keys = {"homeserver": args.matrix_homeserver, "allowed_users": args.matrix_user}
        secrets = {"access_token_file": _env_secret(TOKEN_ENV["matrix"])}
        chats.append(ChatAccount("matrix", "mx", keys, secrets))
    if args.discord:
        keys = {"allowed_user_ids": _flag_snowflakes(args.discord_user)}
        if args.discord_api != DEFAULT_DISCORD_API:
            keys["api_base"] = args.discord_api.rstrip("/")
        secrets = {"bot_token_file": _env_secret(TOKEN_ENV["discord"])}
        chats.append(ChatAccount("discord", "dc", keys, secrets))
    return chats


def _flag_snowflakes(ids: list[str]) -> list[str]:
    try:
        return _snowflakes(",".join(ids))
    except checks.CheckFailed as exc:
        raise CliError(f"--discord-user: {exc}", exit_code=2) from None


def _check_all(answers: Answers) -> None:
    from wakeful.cli.chat_checks import CHAT_CHECKS, TokenCheck

    try:
        print(f"ok   model: {checks.check_model(answers.base_url, answers.model, answers.api_key)}")
        print(f"ok   data_dir: {checks.check_data_dir(answers.data_dir)}")
        checks.check_bind(answers.bind)
        for chat in answers.chats:
            how = CHAT_CHECKS[chat.platform]
            assert isinstance(how, TokenCheck)  # onboard adds only the one-token platforms
            chat.checked = how.ask(_as_config(chat), chat.secrets[how.token_key])
            if chat.platform == "matrix":  # whoami's answer is the account's user_id
                chat.keys["user_id"] = chat.checked
            print(f"ok   {chat.platform}: {chat.checked}")
    except checks.CheckFailed as exc:
        raise CliError(f"nothing written: {exc}", exit_code=1) from None


def _as_config(chat: ChatAccount) -> Any:
    """The entry as the daemon will read it, its defaults (api_base, say) filled in; not
    validated: a Matrix entry has no user_id until whoami gives it, and no secret file
    exists yet."""
    from wakeful.app.chat_section import ChatSection

    (entry,) = get_args(ChatSection.model_fields[chat.platform].annotation)  # list[<Config>]
    return entry.model_construct(name=chat.name, **chat.keys)


# --- the end: what was written, how to start it, the web page --------------------------------


def finish(config: Path, answers: Answers, secrets: list[Path], service: bool) -> int:
    from wakeful.app.config import load_settings

    settings = load_settings(config)  # what `wakeful run -c` will load: it must
    print(f"\nwrote {config}")
    for path in secrets:
        print(f"  secret: {path} (mode 600)")
    start = f"wakeful run -c {config}"
    if service:
        try:
            installed = unit.install_unit(config)
            print(f"installed {installed}")
            unit.start_unit()
        except unit.SystemctlFailed as exc:
            print(f"the service was not started: {exc}")
            print(f"start the daemon yourself: {start}")
            return 1
        if not unit.wait_ready(answers.bind):
            print("the service started but is not ready: journalctl --user -u wakeful")
            return 1
        print("the daemon runs (systemctl --user status wakeful)")
        return _web_link(settings, config)
    print(f"start the daemon: {start}")
    print(f"then the web page: wakeful open -c {config}")
    return 0


def _web_link(settings: Any, config: Path) -> int:
    from wakeful.cli.open import login_url

    try:
        url = login_url(settings)
    except CliError as exc:
        print(f"no web link yet: {exc}")
        return 1
    print(f"the web page (this link works once, for two minutes): {url}")
    print(f"a new link later: wakeful open -c {config}")
    return 0
