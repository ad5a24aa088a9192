"""Carry out an import: check nothing would be overwritten, then write the data (secret
files, the workspace's files, skills, memory entries with their provenance) and the
config last, so a config that exists means the import finished."""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import anyio
from pydantic import ValidationError

from wakeful.app.config import Settings
from wakeful.app.openclaw.config_plan import ConfigPlan, disabled_skills, plan_config
from wakeful.app.openclaw.data_plan import (
    DataPlan,
    MemoryLine,
    SkillCopy,
    Targets,
    has_heartbeat_md,
    plan_data,
)
from wakeful.app.openclaw.report import Outcome, Report
from wakeful.app.openclaw.source import CONFIG_FILE, OpenClawDir, read_openclaw
from wakeful.kernel.atomic_file import write_atomic
from wakeful.kernel.config_files import ConfigError, set_config_dir, write_private
from wakeful.kernel.data_dir_lock import DataDirLocked, hold_data_dir_lock
from wakeful.memory.entries import Entry, EntryKind, EntryLog, EntryStatus, new_entry_id
from wakeful.memory.files import (
    MEMORY_FILE,
    NOTES_DIR,
    REVIEW_FILE,
    MemoryFiles,
    day_file,
    entry_line,
)
from wakeful.skills.catalog import SKILL_FILE
from wakeful.store.factory import open_store

PROVENANCE = "imported from openclaw"
# Why an imported entry waits for review: OpenClaw kept no record of what its agent
# had read when it wrote a line, so a line may be a stranger's words.
UNVOUCHED = (
    "imported from openclaw: written by OpenClaw's agent, which may have been reading "
    "someone else's words; nothing records which"
)


class ImportRefused(Exception):
    """Nothing was written; the message says why and what to do."""


@dataclass(frozen=True)
class ImportOptions:
    config_path: Path
    data_dir: Path | None
    dry_run: bool = False
    force: bool = False
    trust_memory: bool = False


def import_openclaw(path: Path, options: ImportOptions, out: TextIO) -> int:
    """Print the report (and write unless dry_run); 0 done, 1 some items not carried over.
    Raises NotOpenClaw (bad input) or ImportRefused (nothing written)."""
    source = read_openclaw(path)
    config_path = options.config_path.expanduser().absolute()
    data_dir = options.data_dir.expanduser().absolute() if options.data_dir else None
    config = plan_config(source, config_path.parent, has_heartbeat_md(source))
    text = config.text(source, data_dir)
    settings = _settings(text, config_path)
    root = settings.daemon.data_dir_path()
    targets = Targets(
        workspace=settings.safety.workspace_path(root),
        skills=settings.skills.skill_roots(root)[0],
        memory=settings.memory.folder(root),
    )
    data = plan_data(
        source, targets, trust_memory=options.trust_memory, disabled=disabled_skills(source)
    )
    report = Report(config.report.items + data.report.items)
    if not options.dry_run:  # written first: a refusal prints one line, not a report
        _refuse_overwrites(config, data, targets, config_path, options.force)
        _write(config, data, targets, root, settings, text, config_path, options)
    print(_heading(source), file=out)
    for item in report.items:
        print(item.line(), file=out)
    counts = ", ".join(f"{report.count(o)} {o.value}" for o in Outcome)
    if options.dry_run:
        print(f"{counts}; nothing written (--dry-run)", file=out)
    else:
        print(f"{counts}; wrote {config_path}", file=out)
        print(f"start it: wakeful run -c {config_path}", file=out)
    return 1 if report.partial else 0


def _heading(source: OpenClawDir) -> str:
    read = [CONFIG_FILE] if (source.root / CONFIG_FILE).is_file() else []
    read.append(f"workspace {source.workspace}" if source.workspace else "no workspace folder")
    return f"importing {source.root} ({', '.join(read)})"


def _settings(text: str, config_path: Path) -> Settings:
    """The written config as the daemon will read it (with any WAKEFUL_* environment)."""
    set_config_dir(config_path.parent)
    try:
        return Settings(**tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:  # a bug of the importer's, said in one line
        raise ConfigError(f"the config the import made is not TOML: {exc}") from None
    except ValidationError as exc:  # e.g. the Anthropic provider without its SDK installed
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"the config the import made would not load: {problems}") from None


def _refuse_overwrites(
    config: ConfigPlan, data: DataPlan, targets: Targets, config_path: Path, force: bool
) -> None:
    there = [config_path, *config.secrets]
    there += [targets.workspace / name for name in data.workspace_files]
    there += [targets.skills / skill.name for skill in data.skills]
    if data.memory:
        there += [targets.memory / MEMORY_FILE, targets.memory / NOTES_DIR]
    found = [str(p) for p in there if p.exists() or p.is_symlink()]
    if found and not force:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ImportRefused(
            f"{found[0]} already exists{more}; nothing was written: use --force to overwrite "
            "(memory entries are added to what is there), or --dry-run to see the report"
        )


def _write(
    config: ConfigPlan,
    data: DataPlan,
    targets: Targets,
    root: Path,
    settings: Settings,
    text: str,
    config_path: Path,
    options: ImportOptions,
) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with hold_data_dir_lock(root):
            for path, value in config.secrets.items():
                write_private(path, value + "\n")
            for name, body in data.workspace_files.items():
                target = targets.workspace / name
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(target, body)
            for skill in data.skills:
                _copy_skill(skill, targets.skills / skill.name)
            if data.memory:
                anyio.run(_write_memory, settings, root, targets, data.memory, options.trust_memory)
            config_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(config_path, text)
    except DataDirLocked as exc:
        raise ImportRefused(f"{exc}; nothing was imported") from None
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise ImportRefused(f"cannot write{where}: {exc.strerror or exc}") from None


def _copy_skill(skill: SkillCopy, target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    # Links are left behind: one pointing out of the folder would copy what it points at.
    shutil.copytree(skill.source, target, symlinks=False, ignore=_links)
    if skill.old_name is not None:
        skill_file = target / SKILL_FILE
        renamed = set_skill_name(skill_file.read_text(encoding="utf-8"), skill.name)
        write_atomic(skill_file, renamed)


def _links(folder: str, names: list[str]) -> set[str]:
    return {name for name in names if os.path.islink(os.path.join(folder, name))}


def set_skill_name(text: str, name: str) -> str:
    """SKILL.md with its front matter's ``name:`` set (added after the first ``---``)."""
    lines = text.lstrip("\ufeff").split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), len(lines))
    for index in range(1, end):
        if lines[index].startswith("name:"):
            lines[index] = f"name: {name}"
            return "\n".join(lines)
    return "\n".join([lines[0], f"name: {name}", *lines[1:]])


async def _write_memory(
    settings: Settings, root: Path, targets: Targets, lines: list[MemoryLine], trust: bool
) -> None:
    store = await open_store(settings.store, root)
    try:
        entries = EntryLog(store)
        files = MemoryFiles(targets.memory)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        grouped: dict[str, list[str]] = {}
        for line in lines:
            entry = _entry(line, trust, now)
            await entries.put(entry)  # first, as remember does: no line without provenance
            grouped.setdefault(entry.file, []).append(entry_line(entry.text, entry.id))
        for file, chunk in grouped.items():
            await anyio.to_thread.run_sync(files.append, file, "".join(chunk))
    finally:
        await store.aclose()


def _entry(line: MemoryLine, trust: bool, now: str) -> Entry:
    if not trust:
        file = REVIEW_FILE
    elif line.kind is EntryKind.NOTE and line.day is not None:
        file = day_file(line.day)  # the day OpenClaw filed it under
    else:
        file = MEMORY_FILE
    reason = f"{PROVENANCE} {line.source}" + (f" (under {line.heading!r})" if line.heading else "")
    return Entry(
        id=new_entry_id(),
        kind=line.kind,
        text=line.text,
        reason=reason[:500],
        session="import",
        event_id=None,
        tainted=None if trust else UNVOUCHED,
        status=EntryStatus.APPROVED if trust else EntryStatus.REVIEW,
        file=file,
        created_at=now,
        decided_at=now if trust else None,
        by="owner (import)" if trust else "openclaw import",
    )
