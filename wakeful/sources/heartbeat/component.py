"""The heartbeat component: one sleep until the next beat, then the checks; what they
found (if anything) goes to the heartbeat's session as one ``system.heartbeat`` event
with the owner's HEARTBEAT.md checklist. Nothing found: no event, no model call.

SIGHUP re-reads ``[heartbeat]``: the sleep is cut short and the next beat follows the
new interval, active hours and time zone; the checklist's file and the approvals'
patience change too. Its session (whose model was fixed at start) waits for a restart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.core.components.context import ComponentSetup
from wakeful.core.plan import SessionPlans
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event
from wakeful.sources.heartbeat.checks import Checks, Finding
from wakeful.sources.heartbeat.config import HeartbeatSection
from wakeful.sources.heartbeat.schedule import next_beat

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings

log = structlog.get_logger(__name__)
MAX_CHECKLIST_CHARS = 4000


class HeartbeatComponent:
    name = "heartbeat"

    def __init__(self) -> None:
        self.beats = 0  # beats run since start (each a few store reads)
        self.findings = 0  # findings handed to the model since start
        self.next_due: datetime | None = None  # when the run loop beats next
        self._changed = anyio.Event()  # set by a reload: the sleep starts over

    async def configure(self, setup: ComponentSetup) -> None:
        settings = setup.settings
        self.section: HeartbeatSection = settings.heartbeat
        self._zone = ZoneInfo(self.section.timezone)
        self._submit = setup.submit
        registrations = setup.registrations
        self.checks = Checks(
            setup.store,
            SessionPlans(setup.state),
            setup.approvals,
            lambda: registrations.task_views,
            timedelta(minutes=self.section.approval_waiting_minutes),
            skip_session=self.section.session,
            offered=lambda: registrations.heartbeat_checks,
        )
        self._workspace = settings.safety.workspace_path(setup.data_dir)
        self._checklist = self._workspace / self.section.checklist
        if settings.llm.fast_model:  # check-ins are routine: the cheaper model answers them
            setup.set_session_model(self.section.session, settings.llm.fast_model)
        setup.add_status("heartbeat", self._status)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._changed = anyio.Event()
            if not self.section.enabled:  # turned off by a reload: wait for another
                self.next_due = None
                await self._changed.wait()
                continue
            now = datetime.now(UTC)
            due = self.next_due = next_beat(now, self.section, self._zone)
            with anyio.move_on_after((due - now).total_seconds()) as sleeping:
                await self._changed.wait()
            if sleeping.cancelled_caught:  # slept until the beat, no reload in between
                await self.beat(due)

    async def reload(self, settings: Settings) -> list[str]:
        """SIGHUP: the new [heartbeat] from the next beat on (the session: at a restart)."""
        new: HeartbeatSection = settings.heartbeat
        if new.session != self.section.session:
            log.warning(
                "heartbeat.session changes at the next start; the beats keep the old one",
                session=self.section.session,
            )
            new = new.model_copy(update={"session": self.section.session})
        self.section = new
        self._zone = ZoneInfo(new.timezone)
        self._checklist = self._workspace / new.checklist
        self.checks.approval_waiting = timedelta(minutes=new.approval_waiting_minutes)
        self._changed.set()
        return ["heartbeat"]

    async def beat(self, now: datetime) -> list[Finding]:
        """One check-in at ``now``: the checks, and an event only if they found something."""
        self.beats += 1
        found = await self.checks.run(now)
        if not found:
            return []
        text = describe(found, await anyio.to_thread.run_sync(read_checklist, self._checklist))
        event = Event.parse(
            {
                # One per beat: a restart in the middle of a beat does not say it twice.
                "id": f"heartbeat:{now.strftime('%Y%m%dT%H%M')}",
                "kind": EventKind.HEARTBEAT,
                "source": {"type": "system", "principal": "wakeful", "trusted": True},
                "channel": "system",
                "session": self.section.session,
                "content": {"text": text, "data": {"findings": [f.key for f in found]}},
            }
        )
        await self._submit(event)
        await self.checks.said(found)
        self.findings += len(found)
        log.info("heartbeat found something", findings=len(found), session=self.section.session)
        return found

    def _status(self) -> dict[str, int | str | None]:
        due = self.next_due.isoformat() if self.next_due is not None else None
        return {"beats": self.beats, "findings": self.findings, "next_beat": due}


def read_checklist(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:MAX_CHECKLIST_CHARS].strip()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return ""


def describe(found: list[Finding], checklist: str) -> str:
    lines = ["Heartbeat: the daemon's checks found something since the last beat:"]
    lines += [f"- {finding.text}" for finding in found]
    lines.append(
        "Decide whether the owner should hear of it (send_user_notification) or whether "
        "something should be done; if nothing needs doing, answer in one line."
    )
    if checklist:
        lines += ["", "The owner's checklist (HEARTBEAT.md):", checklist]
    return "\n".join(lines)
