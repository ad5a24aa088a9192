"""load_skill: the body of a skill, or one of its files, when a task needs it.

The system prompt names each skill with a one-line description; this tool
returns the instructions (SKILL.md after its front matter) and the list of the
skill's other files, and, given ``file``, one of those files. Reading through
this tool rather than read_file keeps the skill folders out of the file tools'
roots: no tool can write them, and the workspace confinement stays as it is.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.skills.catalog import SkillCatalog

MAX_FILE_BYTES = 256 * 1024


class LoadSkillArgs(ToolArgs):
    name: str = Field(min_length=1, description="the skill's name, as listed under Skills")
    file: str | None = Field(
        default=None,
        description="one of the skill's files (as listed when it is loaded); omit for "
        "its instructions",
    )


class LoadSkill:
    name = "load_skill"
    resident = True  # the listing in the system prompt is useless without it
    description = (
        "Load a skill listed under 'Skills' in the system prompt: returns its instructions "
        "and the names of its files; with file, returns that file. Load a skill before "
        'doing a task it describes. Example: {"name": "release-notes"}'
    )
    Args = LoadSkillArgs
    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 10.0

    def __init__(self, catalog: SkillCatalog) -> None:
        self._catalog = catalog

    async def run(self, args: LoadSkillArgs, ctx: ToolContext) -> ToolOutput:
        skill = self._catalog.get(args.name)
        if skill is None:
            known = ", ".join(self._catalog.names()) or "(none)"
            return ToolOutput(f"no skill named {args.name!r}; name: one of {known}", is_error=True)
        try:
            if args.file is None:
                resources = skill.resources()
                files = "\n".join(f"- {r}" for r in resources) or "(none)"
                text = (
                    f"{skill.body()}\n[files of skill {skill.name} (load_skill with file): "
                    f"\n{files}]"
                )
                return ToolOutput(text, data={"skill": skill.name, "files": resources})
            return _read_resource(skill.directory, args.name, args.file)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return ToolOutput(
                f"skill {args.name!r} could not be read ({exc}); tell the operator",
                is_error=True,
            )


def _read_resource(directory: Path, name: str, file: str) -> ToolOutput:
    located = resolve_inside(file, directory)
    if isinstance(located, Outside) or located == directory.resolve():
        return ToolOutput(
            f"file: {file!r} is not a file of skill {name!r}; give a path as listed when "
            "the skill was loaded",
            is_error=True,
        )
    if not located.is_file():
        return ToolOutput(
            f"file: skill {name!r} has no file {file!r}; load the skill to see its files",
            is_error=True,
        )
    if located.stat().st_size > MAX_FILE_BYTES:
        return ToolOutput(
            f"file: {file!r} is over {MAX_FILE_BYTES // 1024} KiB; ask the operator for a "
            "shorter version",
            is_error=True,
        )
    return ToolOutput(located.read_text(encoding="utf-8"), data={"skill": name, "file": file})
