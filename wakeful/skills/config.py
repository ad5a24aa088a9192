"""The ``[skills]`` section: where SKILL.md folders are found."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from wakeful.kernel.config_base import Section
from wakeful.kernel.field_defaults import empty_list


class SkillsSection(Section):
    """Skills: folders with a SKILL.md the agent loads when a task needs it."""

    paths: list[Path] = Field(
        default_factory=empty_list,
        examples=[["/etc/wakeful/skills", "~/skills"]],
        description=(
            "Directories whose sub-folders each hold a SKILL.md (front matter: name, "
            "description); empty: <data_dir>/skills. Read at start-up; restart to apply a change."
        ),
    )

    def skill_roots(self, data_dir: Path) -> list[Path]:
        return [p.expanduser() for p in self.paths] if self.paths else [data_dir / "skills"]
