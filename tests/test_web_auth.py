"""The web page's log-in, cookie, CSRF and compressed size, over real HTTP (in-process daemon)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.daemon_harness import ADMIN_TOKEN, daemon_settings, harness
from tests.daemon_process import ADMIN_TOKEN as PROCESS_TOKEN
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer
from wakeful.channels.chat_web.component import PAGE_FILES
from wakeful.kernel.http.auth import BAD_CSRF, SESSION_COOKIE

pytestmark = pytest.mark.anyio


async def log_in(client: httpx.AsyncClient) -> dict[str, str]:
    """The headers a logged-in page sends: its cookie and its CSRF token."""
    response = await client.get("/login", params={"token": ADMIN_TOKEN})
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = response.cookies[SESSION_COOKIE]
    client.cookies.clear()  # sent explicitly below, so a test can also leave it out
    headers = {"Cookie": f"{SESSION_COOKIE}={cookie}", "Authorization": ""}
    session = await client.get("/web/session", headers=headers)
    assert session.status_code == 200, session.text
    return {**headers, "X-CSRF-Token": session.json()["csrf"]}


async def test_login_sets_an_httponly_strict_cookie_and_the_page_needs_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        anonymous = httpx.AsyncClient(base_url=h.running.url)
        async with anonymous:
            page = await anonymous.get("/")
            assert page.status_code == 200 and 'name="token"' in page.text
            assert 'aria-label="Message"' not in page.text
            wrong = await anonymous.get("/login", params={"token": "nope"})
            assert wrong.status_code == 401 and 'role="alert"' in wrong.text
            assert SESSION_COOKIE not in wrong.headers.get("set-cookie", "")
            response = await anonymous.get("/login", params={"token": ADMIN_TOKEN})
            set_cookie = response.headers["set-cookie"]
            assert "HttpOnly" in set_cookie and "SameSite=strict" in set_cookie
            assert "Path=/" in set_cookie and ADMIN_TOKEN not in set_cookie
            assert response.headers["referrer-policy"] == "same-origin"
            posted = await anonymous.post("/login", content=f"token={ADMIN_TOKEN}")
            assert posted.status_code == 303 and SESSION_COOKIE in posted.headers["set-cookie"]
            anonymous.cookies.clear()
            headers = await log_in(anonymous)
            page = await anonymous.get("/", headers=headers)
            assert 'aria-label="Message"' in page.text
            assert "script-src 'self'" in page.headers["content-security-policy"]
            status = await anonymous.get("/api/status", headers=headers)
            assert status.status_code == 200
            forged = headers["Cookie"][:-4] + "0000"
            refused = await anonymous.get("/api/status", headers={"Cookie": forged})
            assert refused.status_code == 401


async def test_state_changes_with_the_cookie_need_the_csrf_header(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        headers = await log_in(h.client)
        body = {"session": "main", "text": "hi from the page"}
        cookie_only = {k: v for k, v in headers.items() if k != "X-CSRF-Token"}
        for sent in (cookie_only, {**cookie_only, "X-CSRF-Token": "ab" * 21}):
            refused = await h.client.post("/api/messages", json=body, headers=sent)
            assert refused.status_code == 403 and refused.json()["error"] == BAD_CSRF
        accepted = await h.client.post("/api/messages", json=body, headers=headers)
        assert accepted.status_code == 202, accepted.text
        # The bearer API works as before, and says where each message came from.
        assert await h.send("hi from curl") is not None
        events = (await h.client.get("/api/sessions/main/events")).json()["events"]
        assert [(e["text"], e["channel"]) for e in events] == [
            ("hi from the page", "chat:web"),
            ("hi from curl", "chat:api"),
        ]
        # The Host/Origin guard stands in front of the cookie too.
        foreign = await h.client.post(
            "/api/messages", json=body, headers={**headers, "Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        rebound = await h.client.get("/", headers={**headers, "Host": "evil.example"})
        assert rebound.status_code == 421


async def test_the_page_and_all_it_loads_stay_under_100_kb_compressed(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        headers = {**(await log_in(h.client)), "Accept-Encoding": "gzip"}
        page = await h.client.get("/", headers=headers)
        loaded = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
        assert sorted(loaded) == [
            "/static/app.css",
            "/static/app.js",
            "/static/icon.svg",
            "/static/markdown.js",
        ]
        total = 0
        for path in ["/", *loaded]:
            stream = await h.client.get(path, headers=headers)
            assert stream.status_code == 200 and stream.headers["content-encoding"] == "gzip"
            total += int(stream.headers["content-length"])
            cached = {**headers, "If-None-Match": stream.headers["etag"]}
            again = await h.client.get(path, headers=cached)
            assert again.status_code == 304
        assert total < 100 * 1024, total
        missing = await h.client.get("/static/../wakeful.toml")
        assert missing.status_code == 404
        # Everything it loads is its own: no CDN, no external fonts.
        static = Path(__file__).parents[1] / "wakeful/channels/chat_web/static"
        for name in PAGE_FILES:
            raw = (static / name).read_text()
            assert not re.search(r"https?://", raw.replace("http://www.w3.org/2000/svg", "")), name


def test_logout_revokes_the_session_even_for_a_copied_cookie(tmp_path: Path) -> None:
    """Issue 22: /logout used to only delete the cookie in the browser; a copy kept
    working for 30 days. Now the session is refused everywhere, also after a restart."""
    port = free_port()
    config = write_config(tmp_path / "data", None, port)
    with DaemonProcess(config, port) as proc, httpx.Client(base_url=proc.url) as client:
        login = client.get("/login", params={"token": PROCESS_TOKEN})
        assert login.status_code == 303
        cookie = {"Cookie": f"{SESSION_COOKIE}={login.cookies[SESSION_COOKIE]}"}
        client.cookies.clear()
        kept = client.get("/web/session", headers=cookie)
        assert kept.status_code == 200
        other = client.get("/login", params={"token": PROCESS_TOKEN}).cookies[SESSION_COOKIE]
        client.cookies.clear()
        csrf = {"X-CSRF-Token": kept.json()["csrf"]}
        assert client.post("/logout", headers={**cookie, **csrf}).status_code == 204
        assert client.get("/api/status", headers=cookie).status_code == 401
        assert client.get("/web/session", headers=cookie).status_code == 401
        assert 'name="token"' in client.get("/", headers=cookie).text  # the log-in form
        still = {"Cookie": f"{SESSION_COOKIE}={other}"}
        assert client.get("/api/status", headers=still).status_code == 200  # only that one
        assert proc.stop() == 0
    with DaemonProcess(config, port) as proc, httpx.Client(base_url=proc.url) as client:
        assert client.get("/api/status", headers=cookie).status_code == 401
        assert client.get("/api/status", headers=still).status_code == 200
        assert proc.stop() == 0


# The shipped /login limit (wakeful.channels.chat_web.login), as literals so the test
# also runs (and fails) on code from before it existed.
LOGIN_MAX_FAILURES = 5
LOGIN_WINDOW_S = 60


async def test_login_is_rate_limited_per_client_address(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Issue 22: /login took unlimited guesses. Five wrong tokens from one address, then
    429 with Retry-After (even for the right token) there; another address is unaffected."""
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        guesser = httpx.AsyncClient(base_url=h.running.url)
        # Loopback is 127.0.0.0/8: a second client address on the same machine.
        neighbour = httpx.AsyncClient(
            base_url=h.running.url, transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        )
        async with guesser, neighbour:
            for _ in range(LOGIN_MAX_FAILURES):
                wrong = await guesser.post("/login", content="token=guess")
                assert wrong.status_code == 401
            for attempt in (
                guesser.post("/login", content=f"token={ADMIN_TOKEN}"),
                guesser.get("/login", params={"token": ADMIN_TOKEN}),
            ):
                limited = await attempt
                assert limited.status_code == 429
                assert 0 < int(limited.headers["retry-after"]) <= LOGIN_WINDOW_S
                assert "too many wrong tokens" in limited.json()["error"]
            other = await neighbour.post("/login", content=f"token={ADMIN_TOKEN}")
            assert other.status_code == 303
            assert (await guesser.get("/")).status_code == 200  # the form itself is served
