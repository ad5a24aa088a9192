"""Skills and AGENTS.md: names and descriptions in the prompt, bodies on request,
standing instructions in the byte-stable prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.daemon_harness import daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext
from wakeful.skills.catalog import discover_skills
from wakeful.skills.front_matter import FrontMatterError, split_front_matter
from wakeful.skills.load_skill import LoadSkill, LoadSkillArgs

RELEASE_NOTES = """\
---
name: release-notes
description: >
  Write release notes from merged pull requests;
  use when asked for a changelog.
license: MIT
metadata:
  author: ops
  version: "2"
---
# Release notes

1. List the merged pull requests since the last tag.
2. Group them by kind, newest first; fill in template.md.
"""

INCIDENT = """\
---
name: "incident-review"
description: 'Run a blameless incident review; use after an outage.'
---
Ask what happened, when it was noticed, and what would have caught it sooner.
"""


def write_skill(root: Path, folder: str, text: str, **files: str) -> Path:
    directory = root / folder
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(text, encoding="utf-8")
    for name, content in files.items():
        (directory / name).write_text(content, encoding="utf-8")
    return directory


def skill_roots(tmp_path: Path) -> list[Path]:
    first, second = tmp_path / "skills", tmp_path / "more-skills"
    write_skill(first, "notes", RELEASE_NOTES, **{"template.md": "## Added\n## Fixed\n"})
    write_skill(first, "incident", INCIDENT)
    write_skill(first, "broken", "# no front matter here\n")
    write_skill(first, "badname", "---\nname: Bad Name\ndescription: x\n---\nbody\n")
    write_skill(second, "again", INCIDENT.replace("blameless", "second"))
    return [first, second]


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(
        session="s",
        call_id="c1",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        tasks=CombinedTaskView([]),
        outbox=None,  # type: ignore[arg-type]  # load_skill never talks to the user
    )


def test_front_matter_reads_plain_quoted_and_folded_scalars() -> None:
    keys, body = split_front_matter(RELEASE_NOTES)
    assert keys["name"] == "release-notes"
    assert keys["description"] == (
        "Write release notes from merged pull requests; use when asked for a changelog."
    )
    assert keys["license"] == "MIT"
    assert "author" not in keys and "metadata" not in keys  # nested: skipped, not misread
    assert body.startswith("# Release notes\n")
    assert split_front_matter(INCIDENT)[0]["name"] == "incident-review"
    with pytest.raises(FrontMatterError, match="closing '---'"):
        split_front_matter("---\nname: x\n")


def test_bad_and_duplicate_skills_are_skipped_with_one_warning_each(tmp_path: Path) -> None:
    with capture_logs() as logs:
        catalog = discover_skills([*skill_roots(tmp_path), tmp_path / "missing"])
    assert catalog.names() == ["incident-review", "release-notes"]
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert sorted(Path(w["file"]).parent.name for w in warnings) == ["again", "badname", "broken"]
    assert all(w.get("fix") for w in warnings)
    listing = catalog.listing()
    assert "- release-notes: Write release notes from merged pull requests;" in listing
    assert "blameless" in listing and "second" not in listing  # the first root wins
    assert "List the merged pull requests" not in listing  # bodies stay out of the prompt


@pytest.mark.anyio
async def test_load_skill_reads_the_body_and_files_but_nothing_outside(tmp_path: Path) -> None:
    tool = LoadSkill(discover_skills(skill_roots(tmp_path)))
    (tmp_path / "secret.txt").write_text("not yours")
    loaded = await tool.run(LoadSkillArgs(name="release-notes"), context(tmp_path))
    assert loaded.text.startswith("# Release notes\n")
    assert loaded.data["files"] == ["template.md"]
    template = await tool.run(
        LoadSkillArgs(name="release-notes", file="template.md"), context(tmp_path)
    )
    assert template.text == "## Added\n## Fixed\n"
    for escape in ("../../secret.txt", str(tmp_path / "secret.txt"), "."):
        refused = await tool.run(
            LoadSkillArgs(name="release-notes", file=escape), context(tmp_path)
        )
        assert refused.is_error and refused.text.startswith("file: "), escape
    unknown = await tool.run(LoadSkillArgs(name="nope"), context(tmp_path))
    assert unknown.is_error
    assert unknown.text == "no skill named 'nope'; name: one of incident-review, release-notes"


@pytest.mark.anyio
async def test_skills_and_agents_md_in_the_prompt_bodies_by_tool(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The system prompt carries AGENTS.md and the skills' names; the model loads a
    body with load_skill; an AGENTS.md edited while running changes no request."""
    roots = skill_roots(tmp_path / "conf")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Always answer in French.\n", encoding="utf-8")
    settings = daemon_settings(
        tmp_path / "data",
        model_server.base_url,
        skills={"paths": [str(r) for r in roots]},
        safety={"workspace": str(workspace)},
    )
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("load_skill", {"name": "release-notes"})]),
        Reply(text="Voilà."),
    )
    async with harness(settings) as h:
        async with watch_feed(h) as feed:
            await h.send("write the release notes")
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        (workspace / "AGENTS.md").write_text("Always answer in German.\n", encoding="utf-8")
        later = await h.daemon.dispatcher.sessions.get("main").next_request()
    first, second = (r.body for r in model_server.requests)
    system = first["messages"][0]["content"]
    assert system.startswith(settings.daemon.system_prompt + "\n\n")
    assert "Standing instructions (AGENTS.md in the workspace):\nAlways answer in French." in system
    assert "- incident-review: Run a blameless incident review" in system
    assert "List the merged pull requests" not in system
    assert "load_skill" in [t["function"]["name"] for t in first["tools"]]
    result = next(m for m in second["messages"] if m["role"] == "tool")
    assert "List the merged pull requests" in result["content"]
    assert "- template.md" in result["content"]
    assert later.messages[0] == first["messages"][0]  # the edit applies after a restart
    assert json.dumps(later.tools) == json.dumps(first["tools"])
