"""The skills found at start-up: SKILL.md folders under ``[skills] paths``.

Progressive disclosure: only each skill's name and description go into the
system prompt (:meth:`SkillCatalog.listing`); the body and the folder's other
files are read when the agent asks for them with ``load_skill``. A folder that
cannot be used (no front matter, no name, a name taken) is skipped with one
warning naming the file and the fix, so one bad skill never stops the daemon.
Skills are the operator's files, trusted like the system prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from wakeful.skills.front_matter import FrontMatterError, split_front_matter

log = structlog.get_logger(__name__)

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_DESCRIPTION = 1024
MAX_RESOURCES = 100  # files listed per skill; a skill is a few files, not a tree


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    directory: Path  # the folder holding SKILL.md and its resource files

    @property
    def skill_file(self) -> Path:
        return self.directory / SKILL_FILE

    def body(self) -> str:
        """SKILL.md after its front matter, read now (an edit shows without a restart)."""
        return split_front_matter(self.skill_file.read_text(encoding="utf-8"))[1]

    def resources(self) -> list[str]:
        """The folder's other files, relative, sorted (hidden ones left out)."""
        found = sorted(
            str(path.relative_to(self.directory))
            for path in self.directory.rglob("*")
            if path.is_file()
            and path != self.skill_file
            and not any(part.startswith(".") for part in path.relative_to(self.directory).parts)
        )
        return found[:MAX_RESOURCES]


class SkillCatalog:
    """Skills by name, sorted by name (the prompt listing is byte-stable)."""

    def __init__(self, skills: Sequence[Skill] = ()) -> None:
        self._skills = {skill.name: skill for skill in sorted(skills, key=lambda s: s.name)}

    def __len__(self) -> int:
        return len(self._skills)

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def names(self) -> list[str]:
        return list(self._skills)

    def listing(self) -> str:
        """The system prompt's section; "" without skills."""
        if not self._skills:
            return ""
        lines = [f"- {s.name}: {s.description}" for s in self._skills.values()]
        return (
            "Skills (instructions for particular tasks; when a task matches one, call "
            "load_skill with its name first):\n" + "\n".join(lines)
        )


def discover_skills(roots: Sequence[Path]) -> SkillCatalog:
    """Every usable ``<root>/<folder>/SKILL.md``; the first root wins a name."""
    skills: dict[str, Skill] = {}
    for root in roots:
        if not root.is_dir():
            continue  # the default folder need not exist
        for skill_file in sorted(root.glob(f"*/{SKILL_FILE}")):
            skill = _read_skill(skill_file)
            if skill is None:
                continue
            if skill.name in skills:
                log.warning(
                    "skill skipped: its name is taken",
                    file=str(skill_file),
                    name=skill.name,
                    kept=str(skills[skill.name].skill_file),
                    fix="give one of the two skills another name",
                )
                continue
            skills[skill.name] = skill
    return SkillCatalog(list(skills.values()))


def _read_skill(skill_file: Path) -> Skill | None:
    try:
        keys, _ = split_front_matter(skill_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
        _skip(skill_file, str(exc), "start the file with ---, name: ..., description: ..., ---")
        return None
    name, description = keys.get("name", ""), " ".join(keys.get("description", "").split())
    if not NAME_PATTERN.match(name):
        _skip(
            skill_file,
            f"name {name!r} is missing or not lowercase letters, digits and hyphens",
            "set e.g. name: release-notes",
        )
        return None
    if not description or len(description) > MAX_DESCRIPTION:
        _skip(
            skill_file,
            f"description is empty or over {MAX_DESCRIPTION} characters",
            "say in a sentence or two what the skill is for and when to use it",
        )
        return None
    return Skill(name, description, skill_file.parent)


def _skip(skill_file: Path, problem: str, fix: str) -> None:
    log.warning("skill skipped", file=str(skill_file), problem=problem, fix=fix)
