"""What the heartbeat costs over a simulated day: 48 beats (every 30 minutes) of a
daemon where nothing happens — 20 sessions, each with a plan whose items are not due —
counted in model requests (the promise: none) and timed per beat. (One finished task →
one request at the next beat is tests/test_heartbeat.py's.)

The baseline, in the same run on the same store: listing the sessions (one store read),
the least any check of all sessions does.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from bench.common import (
    LATENCY_HEADER,
    iterations_parser,
    ms_row,
    print_table,
    run_like_the_daemon,
    timed,
)
from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer
from wakeful.app.components import default_components
from wakeful.core.plan import Plan, PlanItem, PlanStatus, SessionPlans
from wakeful.sources.heartbeat.component import HeartbeatComponent
from wakeful.sources.heartbeat.schedule import next_beat

SESSIONS = 20


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        settings = daemon_settings(Path(tmp), model.base_url, heartbeat={"enabled": True})
        components = default_components(settings)
        (heart,) = [c for c in components if isinstance(c, HeartbeatComponent)]
        async with harness(settings, components) as h:
            store = h.daemon.store
            plans = SessionPlans(store)
            later = "2027-06-01T09:00+00:00"
            for s in range(SESSIONS):
                await store.append_messages(f"s{s}", [{"role": "user", "content": "hello"}])
                items = (PlanItem("write the report", PlanStatus.PENDING, later),)
                await plans.put(f"s{s}", Plan(items))
            moment = datetime(2026, 12, 3, tzinfo=UTC)
            zone = ZoneInfo("UTC")
            day: list[float] = []
            for _ in range(48):
                moment = next_beat(moment, heart.section, zone)
                day += await timed(1, lambda m=moment: heart.beat(m), warm_up=0)
            idle_requests = len(model.requests)
            baseline = await timed(n, store.sessions)
            found = heart.findings
    print_table(
        LATENCY_HEADER,
        [
            ms_row(f"listing {SESSIONS} sessions (baseline)", baseline),
            ms_row(f"one beat, nothing found ({SESSIONS} sessions with plans)", day),
        ],
    )
    print(f"a simulated day: 48 beats, {idle_requests} model requests, {found} findings")


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 100).parse_args()
    run_like_the_daemon(main, args.n)
