"""The workspace → wakeful's data: standing instructions, the heartbeat's checklist,
memory entries and skills.

Standing instructions: wakeful has one file of them (AGENTS.md in its workspace, in
every system prompt); OpenClaw's AGENTS.md, SOUL.md, IDENTITY.md, USER.md and TOOLS.md
were all in OpenClaw's system prompt, so they become sections of that one file (their
trust is not raised: they were standing instructions there too).

Memory: OpenClaw's agent wrote MEMORY.md and memory/YYYY-MM-DD.md itself, often after
reading others' words (a web page, an e-mail, a group chat), and kept no record of
which line came from where. So each line becomes an entry waiting for the owner's
review, as wakeful files what a tainted session saved (docs/memory.md), unless the
owner vouches for the files with ``--trust-memory``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from wakeful.app.openclaw.report import Report
from wakeful.app.openclaw.source import OpenClawDir, read_text
from wakeful.memory.entries import EntryKind
from wakeful.memory.files import MAX_ENTRY_CHARS
from wakeful.skills.agents_md import AGENTS_FILE, MAX_BYTES
from wakeful.skills.catalog import NAME_PATTERN, SKILL_FILE
from wakeful.skills.front_matter import FrontMatterError, split_front_matter

# OpenClaw's prompt files, in the order they become sections of AGENTS.md.
STANDING = (
    ("AGENTS.md", None),
    ("SOUL.md", "Persona, tone and boundaries"),
    ("IDENTITY.md", "Identity"),
    ("USER.md", "About the owner"),
    ("TOOLS.md", "Notes on local tools"),
)
HEARTBEAT_FILE = "HEARTBEAT.md"
ONE_TIME = {
    "BOOTSTRAP.md": "OpenClaw's one-time first-run ritual; wakeful has none",
    "BOOT.md": "OpenClaw's start-up checklist; wakeful runs none at start",
}
MEMORY_NAMES = ("MEMORY.md", "memory.md")  # OpenClaw reads the second when the first is missing
NOTES_DIR = "memory"
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")


@dataclass(frozen=True)
class MemoryLine:
    kind: EntryKind
    text: str  # at most MAX_ENTRY_CHARS, one line
    source: str  # the OpenClaw file, relative to the state directory
    heading: str | None  # the Markdown heading it was under
    day: date | None  # a daily note's day


@dataclass(frozen=True)
class SkillCopy:
    source: Path  # the OpenClaw skill folder
    name: str  # the wakeful name (the folder's name under the skills root)
    old_name: str | None  # None: kept; else the front matter's name ("" none) it replaces


@dataclass
class DataPlan:
    workspace_files: dict[str, str] = field(default_factory=dict)  # name → text
    memory: list[MemoryLine] = field(default_factory=list)
    skills: list[SkillCopy] = field(default_factory=list)
    report: Report = field(default_factory=Report)


@dataclass(frozen=True)
class Targets:
    """Where wakeful keeps what is imported (from the written config)."""

    workspace: Path
    skills: Path
    memory: Path


def plan_data(
    source: OpenClawDir, targets: Targets, *, trust_memory: bool, disabled: set[str]
) -> DataPlan:
    plan = DataPlan()
    ws = source.workspace
    if ws is not None:  # without one there is nothing of it to carry (the heading says so)
        _standing(source, ws, targets, plan)
        _heartbeat_file(source, ws, targets, plan)
        _memory(source, ws, targets, plan, trust_memory)
        _others(source, ws, targets, plan)
    _skills(source, targets, plan, disabled)
    _state_dir(source, plan)
    return plan


def _rel(source: OpenClawDir, path: Path) -> str:
    try:
        return path.relative_to(source.root).as_posix()
    except ValueError:
        return str(path)


def has_heartbeat_md(source: OpenClawDir) -> bool:
    return source.workspace is not None and (source.workspace / HEARTBEAT_FILE).is_file()


def _standing(source: OpenClawDir, ws: Path, targets: Targets, plan: DataPlan) -> None:
    target = targets.workspace / AGENTS_FILE
    parts: list[str] = []
    size = 0
    for name, title in STANDING:
        path = ws / name
        if not path.is_file():
            continue
        what = _rel(source, path)
        text = read_text(path)
        if text is None:
            plan.report.dropped(what, "not UTF-8 text")
            continue
        text = text.strip()
        if not text:
            continue
        part = text if title is None else f"## {title} (OpenClaw's {name})\n\n{text}"
        if size + len(part.encode()) + 2 > MAX_BYTES:
            plan.report.dropped(
                what,
                f"standing instructions would be over {MAX_BYTES // 1024} KiB, wakeful's "
                f"limit for {AGENTS_FILE}: shorten it and add it to {target} yourself",
            )
            continue
        parts.append(part)
        size += len(part.encode()) + 2
        if title is None:
            plan.report.carried(what, f"standing instructions in {target}")
        else:
            plan.report.changed(
                what,
                f"a section of {target}: wakeful has one file of standing instructions",
            )
    if parts:
        plan.workspace_files[AGENTS_FILE] = "\n\n".join(parts) + "\n"


def _heartbeat_file(source: OpenClawDir, ws: Path, targets: Targets, plan: DataPlan) -> None:
    path = ws / HEARTBEAT_FILE
    if not path.is_file():
        return
    text = read_text(path)
    if text is None:
        plan.report.dropped(_rel(source, path), "not UTF-8 text")
        return
    plan.workspace_files[HEARTBEAT_FILE] = text
    plan.report.carried(
        _rel(source, path), f"the heartbeat's checklist in {targets.workspace / HEARTBEAT_FILE}"
    )


def _memory(source: OpenClawDir, ws: Path, targets: Targets, plan: DataPlan, trust: bool) -> None:
    where = (
        "in MEMORY.md and the daily notes (--trust-memory)"
        if trust
        else f"waiting for your review in {targets.memory / 'memory' / 'review.md'} "
        "(`wakeful memory list`, then approve or forget)"
    )
    memory_file = next((ws / n for n in MEMORY_NAMES if (ws / n).is_file()), None)
    if memory_file is not None:
        _memory_file(source, memory_file, EntryKind.FACT, None, plan, where)
    notes = ws / NOTES_DIR
    if not notes.is_dir():
        return
    for path in sorted(notes.iterdir()):
        match = _DAY.match(path.name)
        day = _day(match.group(1)) if match else None
        if day is None or not path.is_file():
            plan.report.dropped(
                _rel(source, path),
                "not a daily note (memory/YYYY-MM-DD.md): wakeful's memory has MEMORY.md "
                "and daily notes only; copy it into the workspace if you still need it",
            )
            continue
        _memory_file(source, path, EntryKind.NOTE, day, plan, where)


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _memory_file(
    source: OpenClawDir,
    path: Path,
    kind: EntryKind,
    day: date | None,
    plan: DataPlan,
    where: str,
) -> None:
    what = _rel(source, path)
    text = read_text(path)
    if text is None:
        plan.report.dropped(what, "not UTF-8 text")
        return
    lines = [
        MemoryLine(kind, piece, what, heading, day)
        for line, heading in memory_lines(text)
        for piece in pieces(line, MAX_ENTRY_CHARS)
    ]
    if not lines:
        return
    plan.memory += lines
    plan.report.changed(what, f"{len(lines)} entr{'y' if len(lines) == 1 else 'ies'} {where}")


def memory_lines(text: str) -> list[tuple[str, str | None]]:
    """Each line of a Markdown memory file that says something, with the heading it is
    under: list markers, blank lines, comments, rules and code fences dropped."""
    found: list[tuple[str, str | None]] = []
    heading: str | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip() or heading
            continue
        if (
            not stripped
            or stripped.startswith("```")
            or _COMMENT.match(stripped)
            or set(stripped) <= set("-*_= ")
        ):
            continue
        line = " ".join(_BULLET.sub("", stripped).split())
        if line:
            found.append((line, heading))
    return found


def pieces(text: str, limit: int) -> list[str]:
    """``text``'s words in pieces of at most ``limit`` characters (a word longer than that
    is cut); the pieces joined by single spaces are the words joined so."""
    words = text.split()
    out: list[str] = []
    current = ""
    for word in words:
        while len(word) > limit:
            if current:
                out.append(current)
                current = ""
            out.append(word[:limit])
            word = word[limit:]
        if not word:
            continue
        if current and len(current) + 1 + len(word) > limit:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        out.append(current)
    return out


def _others(source: OpenClawDir, ws: Path, targets: Targets, plan: DataPlan) -> None:
    for name, reason in ONE_TIME.items():
        if (ws / name).is_file():
            plan.report.dropped(_rel(source, ws / name), reason)
    known = {name for name, _ in STANDING} | {HEARTBEAT_FILE, *ONE_TIME, *MEMORY_NAMES}
    known |= {NOTES_DIR, "skills"}
    rest = sorted(
        p.name for p in ws.iterdir() if p.name not in known and not p.name.startswith(".")
    )
    if rest:
        shown = ", ".join(rest[:5]) + (", …" if len(rest) > 5 else "")
        plan.report.dropped(
            _rel(source, ws),
            f"{len(rest)} other file(s) and folder(s) ({shown}): the agent's working files "
            f"are not copied; copy what you need into {targets.workspace}",
        )


def _skills(source: OpenClawDir, targets: Targets, plan: DataPlan, disabled: set[str]) -> None:
    # OpenClaw's precedence: the workspace's skills win over the managed ones.
    roots = [source.workspace / "skills"] if source.workspace is not None else []
    roots.append(source.root / "skills")
    taken: dict[str, str] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
            what = _rel(source, folder)
            if folder.name in disabled:
                continue  # reported with skills.entries
            skill = _skill(folder, what, plan)
            if skill is None:
                continue
            if skill.name in taken:
                plan.report.dropped(
                    what, f"a skill named {skill.name} came from {taken[skill.name]} (it wins)"
                )
                continue
            taken[skill.name] = what
            plan.skills.append(skill)
            target = targets.skills / skill.name
            if skill.old_name is None:
                plan.report.carried(what, f"skill {skill.name} in {target}")
            elif not skill.old_name:
                plan.report.changed(
                    what, f"skill {skill.name} in {target}: its name taken from the folder"
                )
            else:
                plan.report.changed(
                    what,
                    f"skill {skill.name} in {target}: renamed from {skill.old_name!r} "
                    "(wakeful's names are lowercase letters, digits and hyphens)",
                )


def _skill(folder: Path, what: str, plan: DataPlan) -> SkillCopy | None:
    skill_file = folder / SKILL_FILE
    if not skill_file.is_file():
        plan.report.dropped(what, f"no {SKILL_FILE}: not a skill")
        return None
    text = read_text(skill_file)
    if text is None:
        plan.report.dropped(what, f"{SKILL_FILE} is not UTF-8 text")
        return None
    try:
        keys, _ = split_front_matter(text)
    except FrontMatterError as exc:
        plan.report.dropped(what, f"{SKILL_FILE} {exc}")
        return None
    if not " ".join(keys.get("description", "").split()):
        plan.report.dropped(what, f"{SKILL_FILE} has no description: wakeful lists skills by it")
        return None
    declared = keys.get("name", "").strip()
    name = declared or folder.name
    fixed = name if NAME_PATTERN.match(name) else re.sub(r"[^a-z0-9-]+", "-", name.lower())
    fixed = fixed.strip("-")[:64]
    if not NAME_PATTERN.match(fixed):
        plan.report.dropped(what, f"name {name[:40]!r} cannot be made a wakeful skill name")
        return None
    return SkillCopy(folder, fixed, None if fixed == declared else declared)


def _state_dir(source: OpenClawDir, plan: DataPlan) -> None:
    root = source.root
    if (root / "cron").is_dir():
        _cron_jobs(root / "cron", plan)
    if (root / "credentials").is_dir():
        plan.report.dropped(
            "credentials/", "OAuth logins and channel sessions are not read: sign in again"
        )
    agents = root / "agents"
    if agents.is_dir() and any(agents.glob("*/agent/auth-profiles.json")):
        plan.report.dropped(
            "agents/*/agent/auth-profiles.json",
            "API keys and OAuth logins there are not read: give the daemon its key "
            "([llm] api_key_env or api_key_file)",
        )
    transcripts = list(agents.glob("*/sessions/*.jsonl")) if agents.is_dir() else []
    if transcripts:
        plan.report.dropped(
            "agents/*/sessions/",
            f"{len(transcripts)} past conversation(s) are not imported",
        )


def _cron_jobs(folder: Path, plan: DataPlan) -> None:
    """One line per job OpenClaw's scheduler kept (cron/jobs.json), named with its
    schedule, so each can be recreated as a [[timers]] entry; the rest of the folder
    (run logs) is history."""
    # Not made timers: OpenClaw's agent can create jobs (a stranger's e-mail may have asked
    # it to), and a timer's message arrives as the owner's word at every firing.
    how = "recreate it as a [[timers]] entry if you want it (a timer speaks for you)"
    jobs_file = folder / "jobs.json"
    text = read_text(jobs_file) if jobs_file.is_file() else None
    try:
        data = json.loads(text) if text else None
    except ValueError:
        data = None
    jobs = data.get("jobs") if isinstance(data, dict) else data
    if not isinstance(jobs, list) or not jobs:
        plan.report.dropped("cron/", f"OpenClaw's scheduled jobs: {how}")
        return
    for number, job in enumerate(jobs[:50], start=1):
        job = job if isinstance(job, dict) else {}
        name = str(job.get("name") or job.get("id") or f"job {number}")[:60]
        schedule = job.get("schedule")
        when = ""
        if isinstance(schedule, dict):
            when = str(schedule.get("expr") or schedule.get("at") or schedule.get("everyMs") or "")
        plan.report.dropped(f"cron/jobs.json {name!r}", f"{when[:40]}: {how}".lstrip(": "))
    if len(jobs) > 50:
        plan.report.dropped("cron/jobs.json", f"{len(jobs) - 50} more jobs: {how}")
