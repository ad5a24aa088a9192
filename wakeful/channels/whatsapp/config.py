"""``[[chat.whatsapp]]``: one WhatsApp business phone number (Cloud API) per entry."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from wakeful.channels.chat.config import ChatPlatformConfig, base_url
from wakeful.kernel.field_defaults import empty_list

DEFAULT_API_BASE = "https://graph.facebook.com"
DEFAULT_API_VERSION = "v23.0"
# A WhatsApp user id (wa_id) is the phone number in international form, digits only.
WA_ID = re.compile(r"^[1-9][0-9]{6,15}$")
API_VERSION = re.compile(r"^v[0-9]{1,3}\.[0-9]$")
# Template names: lower-case letters, digits and underscores (WhatsApp Manager's rule).
TEMPLATE_NAME = re.compile(r"^[a-z0-9_]{1,512}$")


class WhatsAppConfig(ChatPlatformConfig):
    """A business phone number whose webhook is ``/chat/whatsapp/<name>/webhook``."""

    phone_number_id: str = Field(
        examples=["106540352242922"],
        description="The business phone number's ID (WhatsApp → API Setup), not the number.",
    )
    access_token_file: Path = Field(
        examples=["/etc/wakeful/whatsapp-token"],
        description="File holding a System User access token with whatsapp_business_messaging.",
    )
    app_secret_file: Path = Field(
        examples=["/etc/wakeful/whatsapp-app-secret"],
        description="File holding the Meta app's App Secret: webhook POSTs are signed with it.",
    )
    verify_token_file: Path = Field(
        examples=["/etc/wakeful/whatsapp-verify-token"],
        description="File holding the Verify Token you type in the app's webhook settings.",
    )
    allowed_user_ids: list[str] = Field(
        default_factory=empty_list,
        examples=[["447700900123"]],
        description=(
            "Phone numbers (international form, digits only: WhatsApp's wa_id) whose "
            "messages reach the agent; others are asked to pair."
        ),
    )
    api_base: str = Field(
        default=DEFAULT_API_BASE,
        examples=[DEFAULT_API_BASE],
        description="The Graph API; tests set another.",
    )
    api_version: str = Field(
        default=DEFAULT_API_VERSION,
        examples=[DEFAULT_API_VERSION],
        description="Graph API version in the request path.",
    )
    template_name: str | None = Field(
        default=None,
        examples=["reply_waiting"],
        description=(
            "An approved template sent when a reply is ready more than 24 hours after the "
            "user last wrote (it should say a reply waits; write to see it); the reply is "
            "kept and sent when they write. Unset: such a reply fails with the reason."
        ),
    )
    template_language: str = Field(
        default="en_US",
        examples=["en_US"],
        description="The template's language code, as approved.",
    )
    typing_every_s: float = Field(
        default=20.0,
        gt=0,
        description="How often 'typing…' is renewed while a run is active (it lasts 25 s).",
    )
    retry_min_s: float = Field(default=1.0, gt=0, description="First backoff after a failure.")
    retry_max_s: float = Field(
        default=300.0, gt=0, description="Longest backoff between credential checks."
    )

    @field_validator("phone_number_id")
    @classmethod
    def _digits(cls, value: str) -> str:
        if not (value.isascii() and value.isdigit()):
            raise ValueError(
                "must be the phone number ID (digits, e.g. '106540352242922') from the app's "
                "WhatsApp → API Setup page, not the phone number itself"
            )
        return value

    @field_validator("api_base")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return base_url(value, f"must be an http(s) URL such as {DEFAULT_API_BASE!r}")

    @field_validator("api_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not API_VERSION.match(value):
            raise ValueError(f"must look like {DEFAULT_API_VERSION!r}")
        return value

    @field_validator("template_name")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None and not TEMPLATE_NAME.match(value):
            raise ValueError(
                "must be an approved template's name: lower-case letters, digits and _"
            )
        return value

    @field_validator("allowed_user_ids")
    @classmethod
    def _wa_ids(cls, value: list[str]) -> list[str]:
        wrong = [item for item in value if not WA_ID.match(item)]
        if wrong:
            raise ValueError(
                f"{', '.join(map(repr, wrong))} is not a WhatsApp id; write the phone number "
                "in international form, digits only, without + or spaces: '447700900123'"
            )
        return value

    @model_validator(mode="after")
    def _backoff_order(self) -> WhatsAppConfig:
        if self.retry_max_s < self.retry_min_s:
            raise ValueError(
                f"chat.whatsapp '{self.name}': retry_max_s must be at least retry_min_s"
            )
        return self

    @property
    def webhook_path(self) -> str:
        return f"/chat/whatsapp/{self.name}/webhook"
