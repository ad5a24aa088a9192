"""fetch_url against a real loopback web site: what it returns, and what it refuses
to reach - proven by a resolver and a network backend that record every call."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpcore
import pytest
from anyio.streams.tls import TLSStream

from tests.fakes.web_site import DATA, FakeWebSite
from tests.test_handlers_tools import make_ctx
from tests.tool_calls import run_tool
from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.tools.fetch import FetchUrl
from wakeful.tools.registry import default_registry

pytestmark = pytest.mark.anyio


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """The real network backend, noting every (host, port) it is asked to connect to."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []
        self._real = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        return await self._real.connect_tcp(host, port, timeout, local_address, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AssertionError("fetch_url never connects to a unix socket")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class FakeDns:
    """A resolver with fixed answers that records each lookup."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = answers or {}
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.lookups.append(host)
        if host not in self.answers:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        return self.answers[host]


@pytest.fixture
def site() -> Iterator[FakeWebSite]:
    with FakeWebSite() as running:
        yield running


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


def allowing(
    site: FakeWebSite, dns: FakeDns | None = None, **kwargs: Any
) -> tuple[FetchUrl, RecordingBackend]:
    backend = RecordingBackend()
    tool = FetchUrl(
        http_allow=[f"127.0.0.1:{site.port}"],
        resolve=dns or FakeDns(),
        network_backend=backend,
        **kwargs,
    )
    return tool, backend


async def fetch(tool: FetchUrl, ctx: ToolContext, url: str, **args: Any) -> ToolOutput:
    return await run_tool(tool, {"url": url, **args}, ctx)


async def test_html_becomes_readable_text(site: FakeWebSite, ctx: ToolContext) -> None:
    """A page comes back as its text: title, headings, items, link targets; no script."""
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/page")
    assert not out.is_error, out.text
    assert out.text.startswith("status: 200 OK\n")
    assert f"url: {site.base}/page\n" in out.text
    assert "content-type: text/html; charset=utf-8" in out.text
    assert "Title: The test page" in out.text
    assert "\n# Welcome\n" in out.text
    assert f"a relative link ({site.base}/next)" in out.text
    assert "- first item\n- second item" in out.text
    assert "secret" not in out.text and "color: red" not in out.text
    assert out.untrusted_source == f"fetch_url {site.base}/page"
    assert out.data["status"] == 200


async def test_json_is_returned_as_sent(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/data.json")
    assert not out.is_error, out.text
    assert out.text.endswith("\n\n" + json.dumps(DATA))
    assert out.untrusted_source is not None


async def test_long_text_keeps_head_and_tail_and_saves_the_rest(
    site: FakeWebSite, ctx: ToolContext
) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/lines?n=3000", max_chars=5000)
    assert not out.is_error, out.text
    assert "line 1\n" in out.text and out.text.rstrip().endswith("line 3000")
    assert "line 1500\n" not in out.text
    saved = re.search(r"is saved in (\S+) - read", out.text)
    assert saved is not None, out.text
    full = await anyio.Path(saved.group(1)).read_text()
    assert full.count("\n") == 3000 and "line 1500\n" in full
    assert Path(saved.group(1)).parent == ctx.output_dir


async def test_binary_is_described_in_one_line(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/png")
    assert not out.is_error, out.text
    body = out.text.split("\n\n", 1)[1]
    assert body.startswith("(binary content, image/png, ") and "\n" not in body
    assert "PNG" not in body


async def test_gzip_sent_anyway_is_decompressed(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/gzip")
    assert out.text.endswith("\n\n" + "compressed text\n" * 10), out.text


async def test_a_compressed_body_is_capped_after_inflating(
    site: FakeWebSite, ctx: ToolContext
) -> None:
    """A small gzip body that inflates to 20 MB is cut at the cap, not held whole."""
    tool, _ = allowing(site, max_body_bytes=10_000)
    out = await fetch(tool, ctx, f"{site.base}/bomb", max_chars=50_000)
    assert "note: only the first 10000 bytes were read" in out.text
    assert out.text.split("\n\n", 1)[1] == "a" * 10_000


async def test_an_error_status_is_an_error_with_its_page(
    site: FakeWebSite, ctx: ToolContext
) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/missing")
    assert out.is_error
    assert out.text.startswith("status: 404 Not Found\n")
    assert out.text.endswith("no such page here")
    assert out.untrusted_source is not None  # the server's words, all the same


async def test_the_body_is_read_up_to_the_cap_only(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, _ = allowing(site, max_body_bytes=10_000)
    out = await fetch(tool, ctx, f"{site.base}/big?bytes=2000000", max_chars=50_000)
    assert not out.is_error, out.text
    assert "note: only the first 10000 bytes were read" in out.text
    assert out.text.split("\n\n", 1)[1] == "x" * 10_000


async def test_redirects_are_followed_and_listed(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, backend = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/hops/3")
    assert not out.is_error, out.text
    assert f"url: {site.base}/page\n" in out.text
    chain = " -> ".join(f"{site.base}{p}" for p in ("/hops/3", "/hops/2", "/hops/1", "/page"))
    assert f"redirects: {chain}" in out.text
    assert site.paths() == ["/hops/3", "/hops/2", "/hops/1", "/page"]
    assert len(backend.connects) == 4  # each hop connects afresh, to the checked address


async def test_more_than_five_redirects_stop(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/hops/6")
    assert out.is_error
    assert out.text.startswith("more than 5 redirects, stopped at ")
    assert "/page" not in site.paths()
    assert len(site.paths()) == 6  # the first request and five redirects followed


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://127.0.0.2:{port}/page", "127.0.0.2 is a loopback address"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "the cloud metadata address"),
    ],
)
async def test_a_redirect_to_a_private_address_is_refused(
    site: FakeWebSite, ctx: ToolContext, target: str, reason: str
) -> None:
    """Each hop is checked: an allowed site cannot bounce the fetch inward."""
    tool, backend = allowing(site)
    start = f"{site.base}/to?target={target.format(port=site.port)}"
    out = await fetch(tool, ctx, start)
    assert out.is_error
    assert out.text.startswith("refused: ") and reason in out.text, out.text
    assert f"(a redirect from {start} to " in out.text
    assert backend.connects == [("127.0.0.1", site.port)]  # the allowed first hop only
    assert site.paths() == [f"/to?target={target.format(port=site.port)}"]


async def test_a_redirect_to_another_scheme_is_an_error(
    site: FakeWebSite, ctx: ToolContext
) -> None:
    tool, _ = allowing(site)
    out = await fetch(tool, ctx, f"{site.base}/to?target=file:///etc/passwd")
    assert out.is_error
    assert "redirects to file:///etc/passwd, which fetch_url cannot follow" in out.text
    assert "http:// and https:// URLs only" in out.text


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),
        ("[::1]", "::1 is a loopback address"),
        ("169.254.169.254", "169.254.169.254 is the cloud metadata address"),
        ("10.0.0.1", "10.0.0.1 is a private address"),
        ("192.168.1.1", "192.168.1.1 is a private address"),
        ("172.16.5.4", "172.16.5.4 is a private address"),
        ("100.64.0.1", "100.64.0.1 is a carrier-grade NAT address"),
        ("[fc00::1]", "fc00::1 is a unique-local address"),
        ("[fe80::1]", "fe80::1 is a link-local address"),
        ("[::ffff:127.0.0.1]", "is a loopback address (127.0.0.1) inside an IPv6 address"),
        ("[::ffff:a9fe:a9fe]", "the cloud metadata address (169.254.169.254) inside"),
        ("0.0.0.0", "0.0.0.0 is an unspecified address"),
        ("224.0.0.1", "224.0.0.1 is a multicast address"),
        ("240.0.0.1", "240.0.0.1 is a reserved address"),
    ],
)
async def test_non_public_addresses_are_refused_before_connecting(
    site: FakeWebSite, ctx: ToolContext, host: str, reason: str
) -> None:
    """Not one connection is attempted, not even to the listening loopback site."""
    backend, dns = RecordingBackend(), FakeDns()
    tool = FetchUrl(resolve=dns, network_backend=backend)
    out = await fetch(tool, ctx, f"http://{host}:{site.port}/page")
    assert out.is_error
    assert out.text.startswith("refused: ") and reason in out.text, out.text
    assert "to [safety] http_allow to allow it" in out.text
    assert "\n" not in out.text
    assert backend.connects == [] and dns.lookups == [] and site.paths() == []


@pytest.mark.parametrize("host", ["localhost", "127.1", "2130706433", "0x7f.0.0.1"])
async def test_names_the_system_resolves_to_loopback_are_refused(
    site: FakeWebSite, ctx: ToolContext, host: str
) -> None:
    """The real resolver: odd spellings of 127.0.0.1 are caught after resolution."""
    backend = RecordingBackend()
    out = await fetch(FetchUrl(network_backend=backend), ctx, f"http://{host}:{site.port}/page")
    assert out.is_error
    assert out.text.startswith(f"refused: {host} resolves to "), out.text
    assert "is a loopback address" in out.text
    assert backend.connects == [] and site.paths() == []


async def test_every_address_of_a_name_is_checked(site: FakeWebSite, ctx: ToolContext) -> None:
    """One private address among public ones is enough to refuse the name."""
    dns = FakeDns({"mixed.example": ["93.184.216.34", "2606:2800:220:1::1", "10.1.2.3"]})
    backend = RecordingBackend()
    out = await fetch(FetchUrl(resolve=dns, network_backend=backend), ctx, "http://mixed.example/")
    assert out.is_error
    assert out.text == (
        "refused: mixed.example resolves to 10.1.2.3, 10.1.2.3 is a private address; add "
        '"mixed.example:80" to [safety] http_allow to allow it'
    )
    assert dns.lookups == ["mixed.example"] and backend.connects == []


async def test_an_allowed_name_connects_to_the_address_it_was_checked_at(
    site: FakeWebSite, ctx: ToolContext
) -> None:
    """Resolved once; the connection goes to that IP; Host still names the name."""
    dns = FakeDns({"pinned.example": ["127.0.0.1"]})
    backend = RecordingBackend()
    tool = FetchUrl(
        http_allow=[f"pinned.example:{site.port}"], resolve=dns, network_backend=backend
    )
    out = await fetch(tool, ctx, f"http://pinned.example:{site.port}/host")
    assert not out.is_error, out.text
    assert out.text.endswith(f"host=pinned.example:{site.port}")
    assert dns.lookups == ["pinned.example"]
    assert backend.connects == [("127.0.0.1", site.port)]


async def test_a_name_that_does_not_resolve_is_one_line(ctx: ToolContext) -> None:
    out = await fetch(FetchUrl(resolve=FakeDns()), ctx, "https://nowhere.example/")
    assert out.is_error
    assert out.text.startswith("cannot resolve nowhere.example: ")
    assert "\n" not in out.text


async def test_the_whole_fetch_has_a_deadline(site: FakeWebSite, ctx: ToolContext) -> None:
    tool, _ = allowing(site)
    started = anyio.current_time()
    out = await fetch(tool, ctx, f"{site.base}/slow", timeout_s=0.5)
    assert anyio.current_time() - started < 5
    assert out.is_error and out.data == {"timed_out": True}
    assert out.text.startswith(f"fetch_url timed out after 0.5 s fetching {site.base}/slow")
    assert site.paths() == ["/slow"]


async def test_a_closed_port_is_one_line(ctx: ToolContext) -> None:
    with FakeWebSite() as closing:
        port = closing.port
    tool = FetchUrl(http_allow=[f"127.0.0.1:{port}"])
    out = await fetch(tool, ctx, f"http://127.0.0.1:{port}/")
    assert out.is_error
    assert out.text.startswith(f"cannot connect to http://127.0.0.1:{port}/ (127.0.0.1): ")
    assert "\n" not in out.text


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("file:///etc/passwd", "uses file; fetch_url reads http:// and https:// URLs only"),
        ("ftp://example.com/x", "uses ftp; fetch_url reads http:// and https:// URLs only"),
        ("example.com/page", "uses no scheme; fetch_url reads http:// and https://"),
        ("http:///path", "has no host"),
        ("http://user:pw@example.com/", "carries a user name or password"),
    ],
)
async def test_urls_it_cannot_fetch_are_errors(ctx: ToolContext, url: str, problem: str) -> None:
    dns, backend = FakeDns(), RecordingBackend()
    out = await fetch(FetchUrl(resolve=dns, network_backend=backend), ctx, url)
    assert out.is_error
    assert out.text.startswith("url: ") and problem in out.text, out.text
    assert dns.lookups == [] and backend.connects == []


async def test_https_keeps_the_name_for_tls_while_connecting_to_the_checked_ip(
    tmp_path: Path, ctx: ToolContext
) -> None:
    """SNI and the certificate check use the name; the TCP connection, the checked IP."""
    context, seen_sni = _tls_pair(tmp_path)
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.listeners[0].extra(anyio.abc.SocketAttribute.local_port)
        dns = FakeDns({"secure.example": ["127.0.0.1"]})
        tool = FetchUrl(
            http_allow=[f"secure.example:{port}"], resolve=dns, ssl_context=context.client
        )
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, lambda raw: _answer_over_tls(raw, context.server))
            out = await fetch(tool, ctx, f"https://secure.example:{port}/")
            group.cancel_scope.cancel()
    assert not out.is_error, out.text
    assert out.text.endswith("\n\nover tls"), out.text
    assert seen_sni == ["secure.example"]
    assert dns.lookups == ["secure.example"]


async def test_through_the_registry(site: FakeWebSite, ctx: ToolContext) -> None:
    """The daemon's own registry: http_allow lets the loopback site in; a call taints."""
    registry = default_registry(http_allow=[f"127.0.0.1:{site.port}"])
    tool = registry.get("fetch_url")
    assert tool is not None and tool.effect is Effect.NETWORK and not tool.read_only
    raw = json.dumps({"url": f"{site.base}/data.json"})
    out = await registry.execute("fetch_url", raw, ctx)
    assert not out.is_error, out.text
    assert json.dumps(DATA) in out.text
    assert out.untrusted_source == f"fetch_url {site.base}/data.json"
    reach = await tool.reach(tool.Args.model_validate_json(raw))  # type: ignore[attr-defined]
    assert reach == Reach(hosts=(f"{site.base}/data.json",))
    refused = await default_registry().execute("fetch_url", raw, ctx)
    assert refused.is_error and refused.text.startswith("refused: 127.0.0.1 is a loopback")
    too_much = await registry.execute(
        "fetch_url", json.dumps({"url": "x", "max_chars": 10**6}), ctx
    )
    assert too_much.is_error and "max_chars" in too_much.text
    assert site.paths() == ["/data.json"]


class _TlsContexts:
    def __init__(self, server: ssl.SSLContext, client: ssl.SSLContext) -> None:
        self.server, self.client = server, client


def _tls_pair(tmp_path: Path) -> tuple[_TlsContexts, list[str]]:
    """A self-signed certificate for secure.example, a server context that records the
    SNI name it is sent, and a client context that trusts only that certificate."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=secure.example", "-addext", "subjectAltName=DNS:secure.example",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    seen: list[str] = []
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    server.sni_callback = lambda _sock, name, _ctx: seen.append(name or "") or None
    client = ssl.create_default_context(cafile=str(cert))
    return _TlsContexts(server, client), seen


async def _answer_over_tls(raw: anyio.abc.SocketStream, context: ssl.SSLContext) -> None:
    async with raw:
        stream = await TLSStream.wrap(raw, server_side=True, ssl_context=context)
        request = b""
        while b"\r\n\r\n" not in request:
            request += await stream.receive()
        body = b"over tls"
        await stream.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await stream.aclose()
