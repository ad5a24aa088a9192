"""One verified delivery as a ``webhook.received`` event.

The event id is ``wh:<hook>:<delivery id>``, so the store's dedup by id is
the webhook's dedup: a sender's retry of the same delivery adds nothing.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Context, Event, Source
from wakeful.kernel.http.json_limits import JsonRefused, loads_limited
from wakeful.sources.webhook import github
from wakeful.sources.webhook.auth import Verifier
from wakeful.sources.webhook.config import HookConfig
from wakeful.sources.webhook.mapping import (
    DeliveryFilter,
    event_type,
    raw_text,
    render_template,
)

# In order of preference: the signed Standard Webhooks id, GitHub's, a generic key.
DELIVERY_ID_HEADERS = ("webhook-id", "x-github-delivery", "idempotency-key")
MAX_DELIVERY_ID = 200
FORM_TYPE = "application/x-www-form-urlencoded"
TEXT_TYPE = "text/plain"


class BadDelivery(ValueError):
    """The body or a header cannot be used; the message says why (answered with 400)."""


@dataclass(frozen=True)
class Hook:
    """A configured hook, with its verifier and filters built once at start."""

    config: HookConfig
    verifier: Verifier
    filter: DeliveryFilter

    @property
    def name(self) -> str:
        return self.config.name

    @functools.cached_property
    def source(self) -> Source:
        """Every delivery's source: validated once, not per delivery."""
        return Source(type="webhook", principal=self.config.name, trusted=False)

    @functools.cached_property
    def context(self) -> Context:
        return Context(priority=self.config.priority)


def parse_payload(headers: Mapping[str, str], body: bytes, *, bearer: bool = False) -> Any:
    """The JSON document (GitHub's form-encoded ``payload=`` too).

    A bearer hook also takes what ``curl -d`` and plain-text senders post: a form
    without ``payload`` becomes its fields, ``text/plain`` its text. Signed hooks
    keep to JSON: their signature covers the raw body, which is all they accept.
    """
    media = headers.get("content-type", "").split(";")[0].strip().lower()
    if media == FORM_TYPE:
        fields = parse_qs(body.decode("latin-1"), keep_blank_values=True)
        if "payload" not in fields:
            if bearer:
                return form_fields(body)
            raise BadDelivery("a form-encoded body must carry the JSON in a 'payload' field")
        body = fields["payload"][0].encode("utf-8")
    elif bearer and media == TEXT_TYPE:
        return body.decode(_charset(headers.get("content-type", "")), "replace")
    try:
        return loads_limited(body)
    except JsonRefused as exc:
        raise BadDelivery(str(exc)) from None


def form_fields(body: bytes) -> dict[str, str | list[str]]:
    """``a=1&b=2&b=3`` as ``{"a": "1", "b": ["2", "3"]}`` (curl sends UTF-8 unescaped)."""
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] if len(values) == 1 else values for name, values in fields.items()}


def _charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"')
            try:
                codecs.lookup(charset)
            except LookupError:
                break
            return charset
    return "utf-8"


def delivery_id(headers: Mapping[str, str], body: bytes) -> str:
    """The sender's delivery id, else a hash of the body (identical bodies are one delivery)."""
    for name in DELIVERY_ID_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        usable = value.isprintable() and value == value.strip()
        if not (usable and 0 < len(value) <= MAX_DELIVERY_ID):
            raise BadDelivery(
                f"header {name} must be 1-{MAX_DELIVERY_ID} printable characters "
                "with no surrounding spaces"
            )
        return value
    return _body_hash(body)


def signed_delivery_id(hook: Hook, headers: Mapping[str, str], body: bytes) -> str:
    """The id the store dedups this delivery on.

    GitHub signs the body but not ``X-GitHub-Delivery``: anyone holding one
    signed body could replay it under fresh delivery ids. So a GitHub hook's
    id is the body's hash (each real delivery's body differs: ids, shas and
    timestamps), and the store's dedup by event id catches the replay for as
    long as it keeps events. The header stays in the event's data, for people.
    """
    if hook.config.auth == "github":
        return _body_hash(body)
    return delivery_id(headers, body)


def _body_hash(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def hook_event_type(hook: Hook, headers: Mapping[str, str], payload: Any) -> str | None:
    """A GitHub hook's type comes from the signed payload where it can (github.event_type)."""
    if hook.config.auth == "github":
        return github.event_type(headers.get("x-github-event"), payload)
    return event_type(headers, payload)


def to_event(
    hook: Hook,
    delivery: str,
    kind: str | None,
    payload: Any,
    github_delivery: str | None = None,
) -> Event:
    config = hook.config
    data: dict[str, Any] = {"hook": config.name, "delivery_id": delivery, "event_type": kind}
    if github_delivery is not None:
        data["github_delivery"] = github_delivery  # unsigned: for people, not for dedup
    if config.preset == "github":
        summary, fields = github.summarize(kind, payload)
        shown = "; ".join(f"{k}: {v}" for k, v in fields.items() if v not in (None, "", []))
        text = f"{summary}\n{shown}" if shown else summary
        data["fields"] = fields
    else:
        text = render_template(config.template, payload) if config.template else raw_text(payload)
        data["payload"] = payload
    return Event.parse(
        {
            "id": f"wh:{config.name}:{delivery}",
            "kind": EventKind.WEBHOOK_RECEIVED,
            "source": hook.source,
            "channel": f"webhook:{config.name}",
            "content": {"text": text, "data": data},
            "context": hook.context,
            "session": config.session,
        }
    )
