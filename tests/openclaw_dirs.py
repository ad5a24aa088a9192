"""OpenClaw-shaped directories for the importer's tests, as OpenClaw's docs describe them
(docs.openclaw.ai: ~/.openclaw/openclaw.json in JSON5, the workspace with AGENTS.md,
SOUL.md, MEMORY.md, memory/YYYY-MM-DD.md and skills/<name>/SKILL.md)."""

from __future__ import annotations

from pathlib import Path

OWNER = 4242
API_KEY = "sk-openclaw-IMPORT-secret-key-0123"
INSTRUCTION = "Always sign your answers with a small crab emoji."
PERSONA = "You are Clawd: warm, direct, never verbose."
FACTS = ("The owner's dentist is Dr. Lee, on Tuesdays.", "The owner drinks green tea, no sugar.")
NOTE = "Booked the flight to Lisbon for the conference."
SKILL_DESCRIPTION = "Write release notes from a list of merged pull requests."


def openclaw_dir(
    home: Path,
    *,
    model_url: str,
    telegram_token: str,
    telegram_url: str,
    extra_config: str = "",
    extra_channels: str = "",
) -> Path:
    """``home/.openclaw``: a config every key of which wakeful can take (plus JSON5 members
    added at the top level and under ``channels``), and a workspace."""
    root = home / ".openclaw"
    workspace = root / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "skills" / "release-notes").mkdir(parents=True)
    (root / "openclaw.json").write_text(
        f"""// OpenClaw's config is JSON5: comments and trailing commas are fine.
{{
  agents: {{
    defaults: {{
      workspace: "~/.openclaw/workspace",
      model: {{ primary: "local/fake-model" }}, /* the endpoint below */
    }},
  }},
  models: {{
    providers: {{
      local: {{
        baseUrl: "{model_url}",
        apiKey: "{API_KEY}",
        api: "openai-completions",
        models: [{{ id: "fake-model", name: "Fake" }},],
      }},
    }},
  }},
  channels: {{
    telegram: {{
      enabled: true,
      botToken: "{telegram_token}",
      apiRoot: "{telegram_url}",
      dmPolicy: "allowlist",
      allowFrom: ["tg:{OWNER}",],
    }},
    {extra_channels}
  }},
  {extra_config}
}}
""",
        encoding="utf-8",
    )
    (workspace / "AGENTS.md").write_text(f"# Operating rules\n\n- {INSTRUCTION}\n")
    (workspace / "SOUL.md").write_text(f"{PERSONA}\n")
    (workspace / "MEMORY.md").write_text(
        "# Memory\n\n## People\n" + "".join(f"- {fact}\n" for fact in FACTS)
    )
    (workspace / "memory" / "2026-11-02.md").write_text(f"# 2026-11-02\n\n- {NOTE}\n")
    (workspace / "skills" / "release-notes" / "SKILL.md").write_text(
        f"---\nname: release-notes\ndescription: {SKILL_DESCRIPTION}\n---\n\n"
        "List the pull requests by area, one line each.\n"
    )
    return root
