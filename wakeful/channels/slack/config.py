"""``[[chat.slack]]``: one Slack app (a bot token and its signing secret) per entry."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator

from wakeful.channels.chat.config import ChatPlatformConfig, base_url
from wakeful.kernel.field_defaults import empty_list

DEFAULT_API_BASE = "https://slack.com/api"
# Slack user ids: U… (or W… on Enterprise Grid), upper-case letters and digits.
SLACK_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


class SlackConfig(ChatPlatformConfig):
    """A Slack app whose Events API request URL is ``/chat/slack/<name>/events``."""

    bot_token_file: Path = Field(
        examples=["/etc/wakeful/slack-bot-token"],
        description="File holding the app's Bot User OAuth Token (xoxb-…).",
    )
    signing_secret_file: Path = Field(
        examples=["/etc/wakeful/slack-signing-secret"],
        description="File holding the app's Signing Secret (Basic Information → App Credentials).",
    )
    api_base: str = Field(
        default=DEFAULT_API_BASE,
        examples=[DEFAULT_API_BASE],
        description="Slack's Web API; tests and Slack-compatible gateways set another.",
    )
    allowed_user_ids: list[str] = Field(
        default_factory=empty_list,
        examples=[["U0123ABCDEF"]],
        description="Slack member ids whose messages reach the agent; others are asked to pair.",
    )

    @field_validator("api_base")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return base_url(value, f"must be an http(s) URL such as {DEFAULT_API_BASE!r}")

    @field_validator("allowed_user_ids")
    @classmethod
    def _slack_user_ids(cls, value: list[str]) -> list[str]:
        wrong = [item for item in value if not SLACK_USER_ID.match(item)]
        if wrong:
            raise ValueError(
                f"{', '.join(map(repr, wrong))} is not a Slack user id; ids look like "
                "'U0123ABCDEF' (profile → ⋮ → Copy member ID)"
            )
        return value
