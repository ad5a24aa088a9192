"""The keys every ``[[chat.<platform>]]`` entry has; each platform adds its own."""

from __future__ import annotations

from pydantic import Field, field_validator

from wakeful.kernel.config_base import Section
from wakeful.kernel.session_names import SESSION_PATTERN

PER_USER = "per-user"
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,31}$"


def base_url(value: str, error: str) -> str:
    """An http(s) URL without its trailing slash; ValueError(error) for any other."""
    if not value.startswith(("http://", "https://")):
        raise ValueError(error)
    return value.rstrip("/")


class ChatPlatformConfig(Section):
    name: str = Field(
        pattern=NAME_PATTERN,
        description="This account's name: its channel is chat:<platform>:<name>",
    )
    session: str = Field(
        default="main",
        description=(
            'Session the messages go to: a session name, or "per-user" for one session per '
            "sender (named <platform>:<name>:<user id>)"
        ),
    )

    @field_validator("session")
    @classmethod
    def _session_is_a_name(cls, value: str) -> str:
        if value != PER_USER and not SESSION_PATTERN.match(value):
            raise ValueError(f'must be "{PER_USER}" or a session name such as "main"')
        return value
