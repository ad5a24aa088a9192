"""APScheduler's jobs in Redis, shared by every daemon on the prefix (write-behind).

As with :class:`~wakeful.store.timers.sqlite.SqliteJobStore`, the jobs
live in memory (APScheduler calls its store synchronously on the event
loop) and every change is queued, in order, to one writer task that sends
batches as one MULTI/EXEC. Keys under ``[store] redis_prefix``:

- ``timer:jobs``: a hash, job id → the pickled job (base64);
- ``timer:fires``: a hash of fires in flight (``<job> <run time>`` → what the
  event needs); any daemon starting replays them, the event id dedups;
- ``timer:fired:<job>:<run time>``: the claim of one run, kept ``CLAIM_RETENTION_S``;
- ``timer:changes``: a pub/sub channel naming each changed job, so every
  daemon's scheduler holds the same jobs (a timer set on one daemon fires
  even if that daemon is gone by then).

Every daemon schedules every job; when a run falls due each one tries to
claim it (``SET NX``) and only the winner submits the event. The claim is
queued in the same ordered batch as APScheduler's advance of the job, so
the fire is recorded before a crash could lose the advance. A claim finds
a job removed elsewhere (cancelled on another daemon) and drops it here too.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import pickle
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import structlog
from apscheduler.job import Job
from apscheduler.jobstores.base import JobLookupError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from wakeful.store.fleet.named_lease import process_holder_id
from wakeful.store.fleet.notices import RedisChangeNotices
from wakeful.store.timers.port import PendingFire
from wakeful.store.timers.restoring import RestoringJobStore, take_queued

log = structlog.get_logger(__name__)

COMMIT_DEADLINE_S = 10.0
CLAIM_RETENTION_S = 86_400.0  # longer than any daemon's schedule can lag behind another's

# ARGV: prefix, job id, run time, fires field, fire body, retention ms -> ours | taken | gone
_CLAIM = """
local p = ARGV[1]
if redis.call('HEXISTS', p .. 'timer:jobs', ARGV[2]) == 0 then return 'gone' end
local claim = p .. 'timer:fired:' .. ARGV[2] .. ':' .. ARGV[3]
if not redis.call('SET', claim, '1', 'NX', 'PX', ARGV[6]) then return 'taken' end
redis.call('HSET', p .. 'timer:fires', ARGV[4], ARGV[5])
return 'ours'
"""


@dataclass
class _Op:
    """One queued Redis command; ``reply`` is set once its batch is sent."""

    args: tuple[Any, ...]
    done: anyio.Event | None = None
    reply: Any = None
    failed: bool = False
    published: list[str] = field(default_factory=list)  # job ids to announce


class RedisJobStore(RestoringJobStore):
    def __init__(self, client: Redis, prefix: str) -> None:
        super().__init__()
        self._client = client
        self._prefix = prefix
        self._jobs_key = f"{prefix}timer:jobs"
        self._fires_key = f"{prefix}timer:fires"
        self._channel = f"{prefix}timer:changes"
        self._origin = process_holder_id()  # our own announcements are not applied again
        self._send, self._receive = anyio.create_memory_object_stream[_Op](math.inf)
        self._claims: dict[str, _Op] = {}
        self._ours: set[str] = set()  # fires this daemon claimed or replays
        self.pending_fires: list[PendingFire] = []

    # -- lifecycle --------------------------------------------------------------

    async def open(self) -> None:
        """Read the shared jobs and the fires in flight (before the scheduler starts)."""
        stored = (await self._client.hgetall(self._jobs_key)).values()
        self._loaded = [_unpacked(str(v)) for v in stored]
        fires = await self._client.hgetall(self._fires_key)
        self.pending_fires = sorted(
            (_fire_from_json(str(raw)) for raw in fires.values()), key=lambda f: f.run_time
        )

    async def run_writer(self) -> None:
        """Send queued changes in order and follow other daemons' changes, until cancelled."""
        async with anyio.create_task_group() as group:
            # Subscribed before our first write goes out: what we miss, we read at open.
            # Changes are published in the pipeline that makes them (``_send_batch``).
            notices = RedisChangeNotices(self._client, self._channel, origin=self._origin)
            await group.start(
                notices.follow,
                self._apply_change,
                self._reload_all,  # after a lost subscription: some may have been missed
                name="timer changes from other daemons",
            )
            while True:
                batch = [await self._receive.receive(), *take_queued(self._receive)]
                await self._commit(batch)

    async def drain(self) -> None:
        self._send.close()
        await self._commit(take_queued(self._receive))

    async def _commit(self, batch: list[_Op]) -> None:
        commands = [op for op in batch if op.args]
        # Shielded like the SQLite store's thread: a batch sent is seen through, so a
        # stop never leaves its claims and job changes half known.
        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(COMMIT_DEADLINE_S):
                await self._send_batch(commands)
        except (RedisError, TimeoutError) as exc:
            # The in-memory schedule stays right; a claim that failed fires nothing here.
            log.error("cannot save timer changes to Redis", changes=len(commands), error=str(exc))
            for op in commands:
                op.failed = True
        for op in batch:
            if op.done is not None:
                op.done.set()

    async def _send_batch(self, commands: list[_Op]) -> None:
        if commands:
            async with self._client.pipeline(transaction=True) as pipe:
                for op in commands:
                    pipe.execute_command(*op.args)
                    for job_id in op.published:
                        pipe.publish(self._channel, f"{self._origin} {job_id}")
                replies = await pipe.execute(raise_on_error=False)
            self._settle(commands, replies)

    def _settle(self, commands: list[_Op], replies: list[Any]) -> None:
        position = 0
        for op in commands:
            op.reply = replies[position]
            op.failed = isinstance(op.reply, Exception)
            position += 1 + len(op.published)

    async def flush(self, *, durable: bool = False) -> None:
        """Wait until every change queued so far is in Redis (whose fsync policy decides
        whether it is on disk)."""
        barrier = _Op((), anyio.Event())
        self._send.send_nowait(barrier)
        assert barrier.done is not None
        await barrier.done.wait()

    def close(self) -> None:
        self._receive.close()

    # -- APScheduler's job store interface (in memory, then queued) -------------

    def add_job(self, job: Job) -> None:
        super().add_job(job)
        self._queue_save(job)

    def update_job(self, job: Job) -> None:
        super().update_job(job)
        self._queue_save(job)

    def remove_job(self, job_id: str) -> None:
        super().remove_job(job_id)
        self._queue(_Op(("HDEL", self._jobs_key, job_id), published=[job_id]))

    def remove_all_jobs(self) -> None:
        ids = [job.id for job in super().get_all_jobs()]
        super().remove_all_jobs()
        for job_id in ids:
            self._queue(_Op(("HDEL", self._jobs_key, job_id), published=[job_id]))

    def shutdown(self) -> None:
        pass  # the jobs stay in Redis for the other daemons and the next start

    def _queue_save(self, job: Job) -> None:
        state = base64.b64encode(pickle.dumps(job.__getstate__(), pickle.HIGHEST_PROTOCOL))
        self._queue(_Op(("HSET", self._jobs_key, job.id, state.decode()), published=[job.id]))

    def _queue(self, op: _Op) -> None:
        try:
            self._send.send_nowait(op)
        except anyio.ClosedResourceError:
            log.warning("timer change after the scheduler stopped was not saved")

    # -- other daemons' changes ---------------------------------------------------

    async def _reload_all(self) -> None:
        stored = await self._client.hgetall(self._jobs_key)
        for job in super().get_all_jobs():
            if job.id not in stored:
                self._forget(job.id)
        for job_id in stored:
            await self._apply_change(str(job_id))

    async def _apply_change(self, job_id: str) -> None:
        """Make our in-memory copy of one job what Redis holds now (no write back)."""
        state = await self._client.hget(self._jobs_key, job_id)
        job = self._restore(_unpacked(str(state))) if state is not None else None
        if job is None:
            self._forget(job_id)
        elif super().lookup_job(job_id) is None:
            super().add_job(job)
        else:
            super().update_job(job)
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.wakeup()  # its next wake-up may be sooner now

    def _forget(self, job_id: str) -> None:
        with contextlib.suppress(JobLookupError):  # not here: nothing to forget
            super().remove_job(job_id)

    # -- fires in flight ----------------------------------------------------------

    def record_fire(self, fire: PendingFire, *, replayed: bool = False) -> None:
        name = _fire_field(fire)
        if replayed:  # already in timer:fires; whoever claimed it may have died
            self._ours.add(name)
            return
        args = (
            "EVAL", _CLAIM, 0, self._prefix, fire.job_id, fire.run_time.isoformat(), name,
            _fire_to_json(fire), int(CLAIM_RETENTION_S * 1000),
        )  # fmt: skip
        claim = _Op(args, anyio.Event())
        self._claims[name] = claim
        self._queue(claim)  # ahead of APScheduler's advance of the job, in the same order

    async def claim_fire(self, fire: PendingFire) -> bool:
        name = _fire_field(fire)
        claim = self._claims.pop(name, None)
        if claim is None:
            return name in self._ours
        assert claim.done is not None
        await claim.done.wait()
        if claim.failed:
            log.error("timer run not fired: Redis did not take its claim", timer_id=fire.job_id)
            return False
        if claim.reply == "gone":
            self._forget(fire.job_id)  # removed by another daemon: stop scheduling it here
        if claim.reply != "ours":
            return False
        self._ours.add(name)
        return True

    def fire_ended(self, fire: PendingFire, *, delivered: bool) -> None:
        name = _fire_field(fire)
        if delivered and name in self._ours:
            self._queue(_Op(("HDEL", self._fires_key, name)))
        self._ours.discard(name)


def _fire_field(fire: PendingFire) -> str:
    return f"{fire.job_id} {fire.run_time.isoformat()}"


def _fire_to_json(fire: PendingFire) -> str:
    return json.dumps(
        {"job_id": fire.job_id, "run_time": fire.run_time.isoformat(), "body": fire.body}
    )


def _fire_from_json(raw: str) -> PendingFire:
    data = json.loads(raw)
    return PendingFire(data["job_id"], datetime.fromisoformat(data["run_time"]), data["body"])


def _unpacked(state: str) -> bytes:
    """A job's pickled state from its base64 text; a damaged one gives b"", which the
    restore logs and skips like any job that cannot be restored."""
    try:
        return base64.b64decode(state)
    except ValueError:
        return b""
