"""`wakeful onboard`'s arguments, apart from the guided set-up itself: the CLI's parser
is built for every command, and the set-up's imports (the starter config, pydantic,
httpx, the channels' checks) must not slow `wakeful status` (tests/test_cli.py)."""

from __future__ import annotations

from typing import Any

# The Bot API's and Slack's Web API's addresses (tests point them at fakes).
DEFAULT_TELEGRAM_API = "https://api.telegram.org"
DEFAULT_SLACK_API = "https://slack.com/api"
DEFAULT_DISCORD_API = "https://discord.com/api/v10"
OPENAI_BASE_URL = "https://api.openai.com/v1"
SUGGESTED_MODEL = "gpt-4.1-mini"  # offered only for OpenAI's own endpoint
KEY_ENV = "OPENAI_API_KEY"
# Non-interactive: where each chat secret comes from (never a flag: argv is visible in ps).
TOKEN_ENV = {
    "telegram": "TELEGRAM_BOT_TOKEN",
    "slack": "SLACK_BOT_TOKEN",
    "slack_signing": "SLACK_SIGNING_SECRET",
    "matrix": "MATRIX_ACCESS_TOKEN",
    "discord": "DISCORD_BOT_TOKEN",
}


def add_arguments(sub: Any, add: Any) -> None:
    onboard = add(sub, "onboard", "a guided set-up: model, data, web page, chat apps, service")
    onboard.add_argument(
        "--non-interactive",
        action="store_true",
        help="no questions: flags, else WAKEFUL_* environment, else defaults "
        f"(the model key from ${KEY_ENV})",
    )
    onboard.add_argument("--force", action="store_true", help="replace an existing config file")
    onboard.add_argument("--base-url", help="the model server's OpenAI-compatible base URL")
    onboard.add_argument("--model", help="the model's name, e.g. gpt-4.1-mini")
    onboard.add_argument("--data-dir", help="where events, trajectories and the admin token live")
    onboard.add_argument("--bind", help="HOST:PORT of the web page and API")
    onboard.add_argument(
        "--telegram",
        action="store_true",
        help=f"add a Telegram bot (token from ${TOKEN_ENV['telegram']})",
    )
    onboard.add_argument("--telegram-api", default=DEFAULT_TELEGRAM_API, help="Bot API server")
    onboard.add_argument(
        "--telegram-user", type=int, action="append", default=[], help="an owner's user id"
    )
    onboard.add_argument(
        "--slack",
        action="store_true",
        help=f"add a Slack app (${TOKEN_ENV['slack']}, ${TOKEN_ENV['slack_signing']})",
    )
    onboard.add_argument("--slack-api", default=DEFAULT_SLACK_API, help="Slack's Web API")
    onboard.add_argument("--slack-user", action="append", default=[], help="an owner's member id")
    onboard.add_argument(
        "--matrix-homeserver",
        help=f"add a Matrix account on this homeserver (token from ${TOKEN_ENV['matrix']})",
    )
    onboard.add_argument("--matrix-user", action="append", default=[], help="an allowed user id")
    onboard.add_argument(
        "--discord",
        action="store_true",
        help=f"add a Discord bot (token from ${TOKEN_ENV['discord']})",
    )
    onboard.add_argument("--discord-api", default=DEFAULT_DISCORD_API, help="Discord's REST API")
    onboard.add_argument(
        "--discord-user", action="append", default=[], help="an owner's Discord user id"
    )
    onboard.add_argument(
        "--systemd", action="store_true", help="install and start the systemd user service"
    )
    onboard.add_argument(
        "--no-check", action="store_true", help="write without the live checks (offline builds)"
    )
