"""fetch_url's cost: a page fetched through the guard and the pinned connection.

The fake web site (tests/fakes/web_site.py) serves the test page on loopback,
allowed by http_allow. Measured: ``FetchUrl.run`` of ``/page`` (guard, one
fresh connection to the checked address, HTML to text, shaping) and of
``/hops/3`` (three redirects, each hop checked); a refused address
(``10.0.0.1``: the guard alone, nothing connects). Baseline in the same run:
one ``httpx.AsyncClient`` without keep-alive getting ``/page`` (a fresh
connection each time, as fetch_url makes; no guard, no text conversion).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import httpx

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, print_table, timed
from tests.fakes.web_site import FakeWebSite
from tests.test_handlers_tools import make_ctx
from wakeful.core.tool import ToolContext
from wakeful.tools.fetch import FetchUrl


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeWebSite() as site:
        ctx: ToolContext = make_ctx(Path(tmp))
        tool = FetchUrl(http_allow=[f"127.0.0.1:{site.port}"])

        async def fetch(url: str, error: bool = False) -> None:
            out = await tool.run(FetchUrl.Args(url=url), ctx)
            assert out.is_error is error, out.text

        client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))

        async def baseline() -> None:
            (await client.get(f"{site.base}/page")).raise_for_status()

        async with client:
            plain = await timed(n, baseline)
        rows = [
            ms_row("httpx GET /page, no keep-alive (baseline)", plain),
            ms_row("fetch_url /page", await timed(n, lambda: fetch(f"{site.base}/page"))),
            ms_row("fetch_url /hops/3 (4 requests)",
                   await timed(n, lambda: fetch(f"{site.base}/hops/3"))),
            ms_row("fetch_url 10.0.0.1 (refused)",
                   await timed(n, lambda: fetch("http://10.0.0.1/", error=True))),
        ]  # fmt: skip
        print_table(LATENCY_HEADER, rows)


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 200).parse_args()
    anyio.run(main, args.n)
