"""POST /hooks/{name} on a running daemon: statuses, dedup, rotation, filters, fuzzing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_webhooks_auth import GITHUB_BODY, GITHUB_SIGNATURE
from tests.webhook_fixtures import (
    BEARER_TOKEN,
    NEW_SECRET,
    OLD_SECRET,
    SMALL_CAP,
    LiveDaemon,
    dumps,
    sign_github,
    sign_standard,
)
from tests.webhook_fixtures import live as live
from wakeful.cli.status_text import status_lines
from wakeful.core.front_door import SubmitResult
from wakeful.kernel.events import Event
from wakeful.kernel.http.direct import DirectAnswer
from wakeful.sources.webhook.component import build_hook
from wakeful.sources.webhook.config import HookConfig
from wakeful.sources.webhook.ingress import HookIngress, accepted


def test_signed_delivery_is_committed_as_an_untrusted_webhook_event(live: LiveDaemon) -> None:
    """A Standard Webhooks delivery answers 202 with the id of the event it stored."""
    body = dumps({"type": "invoice.paid", "data": {"name": "ACME-17"}})
    response = live.post("std", body, sign_standard(NEW_SECRET, body, "msg_first"))
    assert response.status_code == 202, response.text
    assert response.json() == {"event_id": "wh:std:msg_first", "duplicate": False}
    [entry] = live.new_events()
    assert entry["id"] == "wh:std:msg_first"
    assert entry["kind"] == "webhook.received"
    assert entry["channel"] == "webhook:std"
    assert entry["session"] == "hooks"
    assert entry["source"] == {"type": "webhook", "principal": "std", "trusted": False}
    assert entry["text"] == "invoice.paid: ACME-17"


def test_github_documented_vector_passes_auth_over_http(live: LiveDaemon) -> None:
    """GitHub's test vector is authentic (not 401); its body is not JSON, so 400 says why."""
    headers = {"x-hub-signature-256": GITHUB_SIGNATURE, "x-github-event": "push"}
    response = live.post("gh", GITHUB_BODY, headers)
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]
    assert live.new_events() == []


def test_github_push_becomes_a_one_line_summary(live: LiveDaemon) -> None:
    """A signed GitHub push is stored with the preset's summary, key fields and priority."""
    payload = {
        "ref": "refs/heads/main",
        "repository": {"full_name": "acme/rocket"},
        "pusher": {"name": "octocat"},
        "commits": [{"id": "1"}],
        "head_commit": {"message": "Tighten bolts"},
    }
    body = dumps(payload)
    response = live.post("gh", body, sign_github(body, "push", "delivery-1"))
    assert response.status_code == 202, response.text
    [entry] = live.new_events()
    # GitHub does not sign X-GitHub-Delivery: the id is the signed body's hash (issue 10).
    assert entry["id"] == "wh:gh:sha256:" + hashlib.sha256(body).hexdigest()
    assert entry["text"].startswith(
        "octocat pushed 1 commit to branch main in acme/rocket: Tighten bolts\n"
    )
    event = live.portal.call(_stored_event, live, entry["seq"])
    assert event["context"]["priority"] == "high"
    assert event["content"]["data"]["fields"]["commits"] == 1
    assert event["content"]["data"]["github_delivery"] == "delivery-1"


async def _stored_event(live: LiveDaemon, seq: int) -> dict[str, Any]:
    [stored] = await live.harness.daemon.store.event_log(None, after_seq=seq - 1, limit=1)
    found: dict[str, Any] = json.loads(stored.event.to_json())
    return found


def test_bearer_hook_takes_the_token_from_the_environment(live: LiveDaemon) -> None:
    """The env-configured bearer token is accepted and a wrong one is 401."""
    body = dumps({"hello": "world"})
    wrong = live.post("tok", body, {"authorization": "Bearer nope-nope-nope"})
    assert wrong.status_code == 401
    assert live.new_events() == []
    good = live.post("tok", body, {"authorization": f"Bearer {BEARER_TOKEN}"})
    assert good.status_code == 202, good.text
    [entry] = live.new_events()
    assert entry["text"] == '{"hello":"world"}'


def _curl(live: LiveDaemon, hook: str, *args: str) -> tuple[int, dict[str, Any]]:
    """POST with the real curl, as the README's examples do; (status, JSON answer)."""
    url = f"{live.harness.running.url}/hooks/{hook}"
    done = subprocess.run(
        ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", *args, url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    answer, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(answer)


def test_bearer_hook_takes_curl_form_and_plain_text_bodies(live: LiveDaemon) -> None:
    """`curl -d` (form fields) and a text/plain body are a bearer hook's payload; a signed
    hook still refuses a form without its JSON `payload` field."""
    auth = ["-H", f"Authorization: Bearer {BEARER_TOKEN}"]
    status, _ = _curl(live, "tok", *auth, "-d", "text=disk almost full", "-d", "host=db1")
    assert status == 202
    [form] = live.new_events()
    assert json.loads(form["text"]) == {"text": "disk almost full", "host": "db1"}
    plain = ["-H", "Content-Type: text/plain; charset=utf-8", "--data-binary", "backup done ✓"]
    status, _ = _curl(live, "tok", *auth, *plain)
    assert status == 202
    [text] = live.new_events()
    assert text["text"] == "backup done ✓"
    signed = sign_standard(NEW_SECRET, b"a=1", "msg_form")
    refused = live.post(
        "std", b"a=1", {**signed, "content-type": "application/x-www-form-urlencoded"}
    )
    assert refused.status_code == 400 and "'payload' field" in refused.json()["error"]
    assert live.new_events() == []


def test_ten_deliveries_of_one_id_make_one_event(live: LiveDaemon) -> None:
    """Ten concurrent retries of one delivery all answer 2xx; exactly one event is stored."""
    body = dumps({"type": "retry.me", "data": {"name": "x"}})
    headers = sign_standard(OLD_SECRET, body, "msg_retried")
    with ThreadPoolExecutor(max_workers=10) as pool:
        responses = list(pool.map(lambda _: live.post("std", body, headers), range(10)))
    assert all(r.status_code == 202 for r in responses), [r.text for r in responses]
    assert sorted(r.json()["duplicate"] for r in responses) == [False] + [True] * 9
    assert [e["id"] for e in live.new_events()] == ["wh:std:msg_retried"]


def test_rotation_accepts_old_and_new_secret(live: LiveDaemon) -> None:
    """During rotation a delivery signed with either configured secret is accepted."""
    for secret, msg_id in ((OLD_SECRET, "rot_old"), (NEW_SECRET, "rot_new")):
        body = dumps({"type": "rotated", "data": {"name": msg_id}})
        assert live.post("std", body, sign_standard(secret, body, msg_id)).status_code == 202
    assert [e["id"] for e in live.new_events()] == ["wh:std:rot_old", "wh:std:rot_new"]


def test_filtered_deliveries_answer_202_and_store_nothing(live: LiveDaemon) -> None:
    """Only opened pull requests pass the 'prs' hook's filters; the rest are 202 filtered."""
    opened = dumps({"action": "opened", "number": 5, "pull_request": {"title": "T"}})
    closed = dumps({"action": "closed", "number": 5})
    for body, event in ((dumps({"ref": "x"}), "push"), (closed, "pull_request")):
        response = live.post("prs", body, sign_github(body, event))
        assert response.status_code == 202
        assert response.json()["filtered"] is True
    assert live.new_events() == []
    assert live.post("prs", opened, sign_github(opened, "pull_request")).status_code == 202
    [entry] = live.new_events()
    assert entry["text"].startswith("Pull request #5 opened")


def test_unknown_hook_is_404(live: LiveDaemon) -> None:
    """A hook that is not configured answers 404 and says how to add it."""
    response = live.post("nope", b"{}", {})
    assert response.status_code == 404
    assert "[[hooks]]" in response.json()["error"]


def test_oversized_bodies_are_413_declared_or_chunked(live: LiveDaemon) -> None:
    """Bodies over the hook's cap answer 413 whether Content-Length says so or not."""
    body = dumps({"type": "big", "pad": "x" * SMALL_CAP})
    headers = sign_standard(NEW_SECRET, body, "msg_big")
    assert live.post("small", body, headers).status_code == 413

    def chunks() -> Any:
        for _ in range(64):
            yield b"x" * 1024

    streamed = live.client.post("/hooks/small", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert live.new_events() == []


def test_stopping_daemon_answers_503_with_retry_after(live: LiveDaemon) -> None:
    """While the daemon stops, a valid delivery gets 503 + Retry-After; a retry later lands."""
    body = dumps({"type": "late", "data": {"name": "n"}})
    headers = sign_standard(NEW_SECRET, body, "msg_late")
    live.set_stopping(True)
    try:
        response = live.post("std", body, headers)
    finally:
        live.set_stopping(False)
    assert response.status_code == 503
    assert int(response.headers["retry-after"]) > 0
    assert live.new_events() == []
    assert live.post("std", body, headers).status_code == 202
    assert [e["id"] for e in live.new_events()] == ["wh:std:msg_late"]


BAD_CASES = [
    "wrong_secret",
    "stale",
    "future",
    "garbled_signature",
    "missing_header",
    "no_auth_bearer",
    "oversized",
    "bad_json",
    "unknown_hook",
]
EXPECTED = {
    "wrong_secret": 401,
    "stale": 401,
    "future": 401,
    "garbled_signature": 401,
    "missing_header": 401,
    "no_auth_bearer": 401,
    "oversized": 413,
    "bad_json": 400,
    "unknown_hook": 404,
}
payloads = st.dictionaries(
    st.text(max_size=8), st.integers() | st.text(max_size=16) | st.booleans(), max_size=4
)


def bad_request(
    case: str, payload: dict[str, Any], skew: int, junk: bytes
) -> tuple[str, bytes, dict[str, str]]:
    msg_id = f"fuzz_{uuid.uuid4().hex}"
    body = dumps(payload)
    now = time.time()
    if case == "wrong_secret":
        other = "whsec_" + "QUFB" * 8
        return "std", body, sign_standard(other, body, msg_id)
    if case in ("stale", "future"):
        at = now - skew if case == "stale" else now + skew
        return "std", body, sign_standard(NEW_SECRET, body, msg_id, at)
    headers = sign_standard(NEW_SECRET, body, msg_id)
    if case == "garbled_signature":
        headers["webhook-signature"] = "v1," + junk.hex()
    elif case == "missing_header":
        del headers["webhook-timestamp"]
    elif case == "no_auth_bearer":
        return "tok", body, {"authorization": "Bearer " + junk.hex()}
    elif case == "oversized":
        big = dumps({**payload, "pad": "x" * (SMALL_CAP + len(junk))})
        return "small", big, sign_standard(NEW_SECRET, big, msg_id)
    elif case == "bad_json":
        # Never valid JSON: no JSON text ends with a comma.
        broken = b"{" + junk.decode("latin-1").encode() + b","
        return "std", broken, sign_standard(NEW_SECRET, broken, msg_id)
    elif case == "unknown_hook":
        return "missing-" + junk.hex()[:8], body, headers
    return "std", body, headers


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    case=st.sampled_from(BAD_CASES),
    payload=payloads,
    skew=st.integers(min_value=301, max_value=10**7),
    junk=st.binary(min_size=1, max_size=64),
)
def test_fuzzed_bad_requests_get_the_right_status_and_enqueue_nothing(
    live: LiveDaemon, case: str, payload: dict[str, Any], skew: int, junk: bytes
) -> None:
    """Malformed, wrong-secret, stale, oversized or unknown-hook requests store nothing."""
    hook, body, headers = bad_request(case, payload, skew, junk)
    response = live.post(hook, body, headers)
    assert response.status_code == EXPECTED[case], (case, response.text)
    assert "error" in response.json()
    assert live.new_events() == []


@settings(max_examples=25, deadline=None)
@given(payload=payloads, repeats=st.integers(min_value=1, max_value=4))
def test_fuzzed_valid_deliveries_store_exactly_one_event(
    live: LiveDaemon, payload: dict[str, Any], repeats: int
) -> None:
    """A valid delivery, sent once or repeated, stores exactly one event with its id."""
    msg_id = f"ok_{uuid.uuid4().hex}"
    body = dumps(payload)
    headers = sign_standard(NEW_SECRET, body, msg_id)
    for _ in range(repeats):
        assert live.post("std", body, headers).status_code == 202
    assert [e["id"] for e in live.new_events()] == [f"wh:std:{msg_id}"]


@given(
    event_id=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1),
    duplicate=st.booleans(),
)
def test_the_accepted_answer_is_the_json_answer_byte_for_byte(
    event_id: str, duplicate: bool
) -> None:
    """The 202 is formatted directly (every delivery gets one); it must be what the JSON
    encoder gives for the same content: quotes, backslashes, controls, any character."""
    made = accepted(SubmitResult(event_id, duplicate))
    assert made == DirectAnswer.json(202, {"event_id": event_id, "duplicate": duplicate})
    assert json.loads(made.body) == {"event_id": event_id, "duplicate": duplicate}


async def _never_called(event: Event) -> SubmitResult:
    raise AssertionError("no delivery was made")


def test_a_configured_hook_no_delivery_reached_is_listed_by_name() -> None:
    """`wakeful status` named no hook before its first delivery (`webhooks: -`)."""
    hooks = {
        name: build_hook(HookConfig(name=name, auth="bearer", secret="s3cret-token-value"))
        for name in ("deploys", "alerts")
    }
    ingress = HookIngress(hooks, _never_called)
    assert ingress.stats() == {"deploys": {"accepted": 0}, "alerts": {"accepted": 0}}
    lines = status_lines({"webhooks": ingress.stats()})
    assert "webhooks: deploys (accepted 0), alerts (accepted 0)" in lines
