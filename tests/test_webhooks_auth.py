"""Webhook auth, secrets, mapping and config: the pieces, called directly."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.webhook_fixtures import sign_standard
from wakeful.app.config import ConfigError, load_settings
from wakeful.sources.webhook.auth import (
    AuthError,
    BearerToken,
    GitHubSignature,
    StandardWebhooks,
    make_verifier,
    standard_key,
)
from wakeful.sources.webhook.component import build_hook
from wakeful.sources.webhook.config import HookConfig, HookFilter
from wakeful.sources.webhook.delivery import BadDelivery, delivery_id, parse_payload
from wakeful.sources.webhook.mapping import DeliveryFilter, render_template
from wakeful.sources.webhook.secrets import resolve_secrets

GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def new_secret() -> str:
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


def test_standard_webhooks_signature_from_reference_package_verifies() -> None:
    """A delivery signed by the `standardwebhooks` package passes our verifier."""
    secret, body, now = new_secret(), b'{"type":"invoice.paid","n":1}', time.time()
    verifier = make_verifier("standard", [secret])
    verifier.verify(sign_standard(secret, body, "msg_1", now), body, now)


def test_standard_webhooks_accepts_any_of_several_signatures_and_secrets() -> None:
    """Rotation: either secret verifies, and one matching signature among several suffices."""
    old, new, body, now = new_secret(), new_secret(), b"{}", time.time()
    verifier = StandardWebhooks([standard_key(old), standard_key(new)])
    for secret in (old, new):
        verifier.verify(sign_standard(secret, body, "m", now), body, now)
    headers = sign_standard(new, body, "m", now)
    wrong = sign_standard(new_secret(), body, "m", now)["webhook-signature"]
    headers["webhook-signature"] = f"v1a,xyz {wrong} {headers['webhook-signature']}"
    verifier.verify(headers, body, now)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"webhook-timestamp": "drift:-301"}, "5 minutes"),
        ({"webhook-timestamp": "drift:301"}, "5 minutes"),
        ({"webhook-timestamp": "12a"}, "whole seconds"),
        ({"webhook-id": "other"}, "no signature"),
        ({"webhook-signature": "v1,not-base64!"}, "no signature"),
        ({"webhook-signature": ""}, "missing header"),
    ],
)
def test_standard_webhooks_refuses_tampered_or_stale(change: dict[str, str], message: str) -> None:
    """A stale/future timestamp, another id, a bad or absent signature each fail with a reason."""
    secret, body, now = new_secret(), b'{"a":1}', time.time()
    headers = sign_standard(secret, body, "msg", now)
    for name, value in change.items():
        if value.startswith("drift:"):
            drift = int(value.removeprefix("drift:"))
            headers = sign_standard(secret, body, "msg", now + drift)
        else:
            headers[name] = value
    with pytest.raises(AuthError, match=message):
        make_verifier("standard", [secret]).verify(headers, body, now)


def test_standard_key_rejects_non_base64_and_short_secrets() -> None:
    """A secret that is not whsec_+base64 of 24-64 bytes is refused with what to do."""
    with pytest.raises(ValueError, match="base64"):
        standard_key("whsec_not base64!")
    with pytest.raises(ValueError, match="24-64 bytes"):
        standard_key("whsec_" + base64.b64encode(b"short").decode())


def test_github_documented_test_vector() -> None:
    """GitHub's documented secret, payload and signature verify; a changed body does not."""
    verifier = GitHubSignature([GITHUB_SECRET.encode()])
    verifier.verify({"x-hub-signature-256": GITHUB_SIGNATURE}, GITHUB_BODY, 0.0)
    with pytest.raises(AuthError, match="does not match"):
        verifier.verify({"x-hub-signature-256": GITHUB_SIGNATURE}, b"Hello, World?", 0.0)
    with pytest.raises(AuthError, match="missing header"):
        verifier.verify({}, GITHUB_BODY, 0.0)


def test_bearer_token_checks_every_token() -> None:
    """Any configured token passes; a wrong token or scheme fails."""
    verifier = BearerToken([b"token-one-123", b"token-two-456"])
    verifier.verify({"authorization": "Bearer token-two-456"}, b"", 0.0)
    with pytest.raises(AuthError, match="not one of"):
        verifier.verify({"authorization": "Bearer token-three"}, b"", 0.0)
    with pytest.raises(AuthError, match="Bearer"):
        verifier.verify({"authorization": "Basic dXNlcjpwYXNz"}, b"", 0.0)


def test_secrets_come_from_inline_env_and_file_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inline, env and every line of the file are all accepted, without repeats."""
    path = tmp_path / "secret"
    path.write_text("from-file-1\n\nfrom-file-2\n")
    monkeypatch.setenv("HOOK_SECRET_A", "from-env-1")
    hook = HookConfig(
        name="h",
        secret="inline-1",
        secrets=["inline-2", "inline-1"],
        secret_env="HOOK_SECRET_A",
        secret_file=path,
    )
    assert resolve_secrets(hook) == [
        "inline-1",
        "inline-2",
        "from-env-1",
        "from-file-1",
        "from-file-2",
    ]


def test_missing_secret_sources_name_the_key(tmp_path: Path) -> None:
    """An unset env var, an unreadable file and no secret at all each name the key."""
    with pytest.raises(ConfigError, match="secret_env: environment variable NOPE_X"):
        resolve_secrets(HookConfig(name="h", secret_env=["NOPE_X"]))
    with pytest.raises(ConfigError, match="secret_file: cannot read"):
        resolve_secrets(HookConfig(name="h", secret_file=tmp_path / "absent"))
    with pytest.raises(ConfigError, match="no secret configured"):
        resolve_secrets(HookConfig(name="h"))
    with pytest.raises(ConfigError, match=r"hooks .h. secret .*base64"):
        build_hook(HookConfig(name="h", auth="standard", secret="plain words"))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('name = "a b"', "'hooks.0.name'"),
        ('name = "h"\ntemplate = "{action"', "'hooks.0.template'"),
        ('name = "h"\nfilters = [{field = "x"}]', "exactly one of"),
        ('name = "h"\nfilters = [{field = "x", pattern = "("}]', "not a valid regular"),
        ('name = "h"\nprefix = 1', "unknown key 'hooks.0.prefix'"),
        ('name = "h"\n[[hooks]]\nname = "h"', "hook names must be unique"),
    ],
)
def test_bad_hook_config_names_the_key(tmp_path: Path, toml: str, message: str) -> None:
    """Config mistakes in [[hooks]] are refused at load with the key named."""
    path = tmp_path / "wakeful.toml"
    path.write_text(f"[[hooks]]\n{toml}\n")
    with pytest.raises(ConfigError, match=message):
        load_settings(path)


def test_template_renders_paths_indices_missing_and_braces() -> None:
    """Dotted paths, list indices, absent fields and literal braces render as documented."""
    payload: dict[str, Any] = {
        "action": "opened",
        "repository": {"full_name": "o/r"},
        "commits": [{"id": 7}],
    }
    text = render_template(
        "{action} on {repository.full_name} #{commits.0.id} {{x}} {nope}", payload
    )
    assert text == "opened on o/r #7 {x} (missing)"


def test_filters_match_event_type_and_fields() -> None:
    """Event types and field conditions must all hold; JSON true is not 1."""
    rules = DeliveryFilter.build(
        ["pull_request"],
        [
            HookFilter(field="action", one_of=["opened", "reopened"]),
            HookFilter(field="pull_request.base.ref", pattern="^main$"),
            HookFilter(field="draft", equals=False),
        ],
    )
    good = {"action": "opened", "pull_request": {"base": {"ref": "main"}}, "draft": False}
    assert rules.rejects("pull_request", good) is None
    assert "event type" in (rules.rejects("push", good) or "")
    assert "action" in (rules.rejects("pull_request", {**good, "action": "closed"}) or "")
    assert "draft" in (rules.rejects("pull_request", {**good, "draft": 0}) or "")


def test_delivery_id_prefers_signed_id_then_github_then_key_then_hash() -> None:
    """The delivery id comes from the first header present, else the body's hash."""
    assert delivery_id({"webhook-id": "a", "idempotency-key": "c"}, b"") == "a"
    assert delivery_id({"x-github-delivery": "b", "idempotency-key": "c"}, b"") == "b"
    assert delivery_id({"idempotency-key": "c"}, b"") == "c"
    assert delivery_id({}, b"x") == delivery_id({}, b"x") != delivery_id({}, b"y")
    with pytest.raises(BadDelivery, match="printable"):
        delivery_id({"idempotency-key": " padded "}, b"")


def test_payload_parsing_reports_the_reason() -> None:
    """Bad JSON names the error; GitHub's form-encoded payload= is understood."""
    with pytest.raises(BadDelivery, match="not valid JSON"):
        parse_payload({}, b"{nope")
    form = {"content-type": "application/x-www-form-urlencoded"}
    assert parse_payload(form, b"payload=%7B%22a%22%3A1%7D") == {"a": 1}


@given(fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
@example(fraction=0.9999997)  # the one that failed: within a microsecond of the next second
def test_the_signing_fixture_verifies_at_any_moment_of_a_second(fraction: float) -> None:
    """The tests' signer (the reference package) and the header agree on the second, also in
    its last microsecond (datetime rounds 0.9999996 up: a flood test's rare 401)."""
    secret, body = new_secret(), b"{}"
    at = 1_765_111_111 + fraction
    headers = sign_standard(secret, body, "m", at)
    StandardWebhooks([standard_key(secret)]).verify(headers, body, at)
