"""openclaw.json → the wakeful config: the model, the chat channels, the heartbeat.

Each key read is reported: carried over as it was, changed (what differs), or not
carried over (why). Secrets go into files of their own beside the config (mode 600),
named by ``*_file`` keys; neither the config nor the report holds a secret's value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wakeful.app.openclaw.report import Report
from wakeful.app.openclaw.source import (
    OpenClawDir,
    Secret,
    environment,
    looks_like_env_name,
    secret,
)
from wakeful.app.openclaw.toml_text import key_line

# Provider ids OpenClaw names in "provider/model" → (wakeful provider, base_url, key variable).
KNOWN_PROVIDERS: dict[str, tuple[str, str | None, str | None]] = {
    "openai": ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("anthropic", None, "ANTHROPIC_API_KEY"),
    "openrouter": ("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "ollama": ("openai", "http://127.0.0.1:11434/v1", None),
}
# models.providers.*.api → the wakeful provider that speaks it.
APIS = {
    "openai-completions": "openai",
    "openai-responses": "openai",
    "anthropic-messages": "anthropic",
}
# OpenClaw's own bookkeeping in openclaw.json: nothing of the assistant's in them.
SILENT_KEYS = {"$schema", "meta", "wizard"}
HANDLED_KEYS = {"agents", "agent", "channels", "models", "env", "skills", "gateway"}
_CHANNEL_NAME = re.compile(r"[^a-z0-9_-]+")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_CLOCK = re.compile(r"^([01]\d|2[0-4]):[0-5]\d$")


@dataclass
class ConfigPlan:
    """The config's text, the secret files beside it, and what the report says."""

    config_dir: Path
    sections: list[list[str]] = field(default_factory=list)
    secrets: dict[Path, str] = field(default_factory=dict)  # file → value
    report: Report = field(default_factory=Report)
    heartbeat: bool = False

    def text(self, source: OpenClawDir, data_dir: Path | None) -> str:
        head = [
            "# wakeful configuration, imported from OpenClaw by `wakeful import openclaw`",
            f"# from {source.root} on {datetime.now(UTC):%Y-%m-%d}. The import's report said",
            "# what was carried over, changed and left out; docs/import.md explains.",
            "# Every key has a default; see docs/configuration.md for the rest.",
            "# Any key can also be set from the environment as WAKEFUL_<SECTION>__<KEY>.",
            "# Secrets are in files beside this one (mode 600), named by the *_file keys.",
            "",
            "[daemon]",
            "# Where events, trajectories, memory, skills and the workspace live.",
            key_line("data_dir", str(data_dir))
            if data_dir is not None
            else '# data_dir = "/var/lib/wakeful"         # default: ~/.local/state/wakeful',
            'log_level = "info"                      # debug | info | warning | error',
        ]
        body = [line for section in self.sections for line in ["", *section]]
        tail = [
            "",
            "# The HTTP API and web page (OpenClaw's gateway is not carried over):",
            "# [server]",
            '# bind = "127.0.0.1:8787"              # loopback; a TLS reverse proxy to expose it',
            "# Every other section, commented: `wakeful init --path starter.toml`.",
        ]
        return "\n".join(head + body + tail) + "\n"

    def secret_file(self, name: str, value: str) -> Path:
        path = self.config_dir / name
        self.secrets[path] = value
        return path


def plan_config(source: OpenClawDir, config_dir: Path, has_heartbeat_md: bool) -> ConfigPlan:
    plan = ConfigPlan(config_dir)
    for key in sorted(source.config):
        if key not in HANDLED_KEYS and key not in SILENT_KEYS:
            plan.report.dropped(key, _why_not(key))
    _llm(source, plan)
    _agents(source, plan, has_heartbeat_md)
    _channels(source, plan)
    _gateway_and_skills(source, plan)
    return plan


def _why_not(key: str) -> str:
    reasons = {
        "cron": "OpenClaw's scheduler settings; recreate jobs as [[timers]] in the config",
        "hooks": "OpenClaw's hooks differ from wakeful's webhooks; recreate them as [[hooks]]",
        "tools": "tool policy differs: wakeful's [safety] and approvals decide (docs/safety.md)",
        "plugins": "OpenClaw plugins do not run in wakeful",
    }
    return reasons.get(key, "no wakeful equivalent")


# --- the model -------------------------------------------------------------------------


def _llm(source: OpenClawDir, plan: ConfigPlan) -> None:
    defaults = source.defaults()
    section = ["[llm]"]
    raw = defaults.get("model")
    primary = raw.get("primary") if isinstance(raw, dict) else raw
    if isinstance(raw, dict) and raw.get("fallbacks"):
        plan.report.dropped(
            "agents.defaults.model.fallbacks", "wakeful calls one model; no fallback chain"
        )
    if not isinstance(primary, str) or not primary.strip():
        plan.report.dropped(
            "agents.defaults.model", "no model named in openclaw.json: set [llm] model"
        )
        plan.sections.append(
            [*section, 'model = ""                              # e.g. "gpt-4.1-mini"']
        )
        return
    ref = _resolve_alias(defaults, primary.strip())
    provider_id, _, model = ref.partition("/") if "/" in ref else ("", "", ref)
    models = source.config.get("models")
    found = models.get("providers") if isinstance(models, dict) else None
    providers: dict[str, Any] = found if isinstance(found, dict) else {}
    custom = providers.get(provider_id)
    what = "agents.defaults.model"
    if isinstance(custom, dict):
        _custom_provider(source, plan, section, provider_id, custom, model)
    elif provider_id in KNOWN_PROVIDERS or not provider_id:
        name, base_url, key_env = KNOWN_PROVIDERS[provider_id or "openai"]
        section.append(key_line("provider", name))
        if base_url:
            section.append(key_line("base_url", base_url))
        section.append(key_line("model", model))
        if key_env:
            _api_key(source, plan, section, key_env_or_value=Secret(env=key_env), what=what)
        if provider_id:
            plan.report.carried(what, f"{ref} → [llm] provider {name}, model {model}")
        else:
            plan.report.changed(
                what, f"{ref} names no provider: taken as an OpenAI-compatible model"
            )
    else:
        plan.report.dropped(
            what,
            f"{ref}: provider {provider_id!r} has no wakeful equivalent (wakeful speaks "
            "OpenAI-compatible and Anthropic APIs): set [llm] yourself",
        )
        section.append('model = ""                              # e.g. "gpt-4.1-mini"')
    for other in sorted(set(providers) - {provider_id}):
        plan.report.dropped(
            f"models.providers.{other}", "not the model in use; wakeful has one endpoint"
        )
    if defaults.get("utilityModel") or defaults.get("imageModel"):
        plan.report.dropped(
            "agents.defaults.utilityModel/imageModel",
            "wakeful has one model ([llm] fast_model serves the heartbeat only)",
        )
    plan.sections.append(section)


def _resolve_alias(defaults: dict[str, Any], ref: str) -> str:
    models = defaults.get("models")
    if isinstance(models, dict) and "/" not in ref:
        for full, settings in models.items():
            if isinstance(settings, dict) and settings.get("alias") == ref:
                return str(full)
    return ref


def _custom_provider(
    source: OpenClawDir,
    plan: ConfigPlan,
    section: list[str],
    provider_id: str,
    custom: dict[str, Any],
    model: str,
) -> None:
    what = f"models.providers.{provider_id}"
    api = custom.get("api") or "openai-completions"
    name = APIS.get(str(api))
    base_url = custom.get("baseUrl")
    if name is None or not isinstance(base_url, str) or not base_url.startswith("http"):
        plan.report.dropped(
            what, f"api {api!r} with baseUrl {base_url!r} has no wakeful equivalent: set [llm]"
        )
        section.append('model = ""                              # e.g. "gpt-4.1-mini"')
        return
    section += [
        key_line("provider", name),
        key_line("base_url", base_url),
        key_line("model", model),
    ]
    raw_key = custom.get("apiKey")
    if isinstance(raw_key, str) and looks_like_env_name(raw_key.strip()):
        found: Secret | None = Secret(env=raw_key.strip())
    else:
        found = secret(source, raw_key)
    if found is not None:
        _api_key(source, plan, section, key_env_or_value=found, what=f"{what}.apiKey")
    if api == "openai-responses":
        plan.report.changed(what, f"{base_url}: chat completions instead of the Responses API")
    else:
        plan.report.carried(what, f"{base_url}, model {model} → [llm] provider {name}")
    extra = sorted(set(custom) - {"api", "baseUrl", "apiKey", "models"})
    if extra:
        plan.report.dropped(what, f"{', '.join(extra)}: no wakeful equivalent")


def _api_key(
    source: OpenClawDir, plan: ConfigPlan, section: list[str], key_env_or_value: Secret, what: str
) -> None:
    found = key_env_or_value
    if found.env is not None and source.env_value(found.env):
        found = Secret(value=source.env_value(found.env))
    if found.value is not None:
        path = plan.secret_file("llm-api-key", found.value)
        section.append(key_line("api_key_file", str(path), "mode 600"))
        plan.report.changed(what, f"the key is in {path} (mode 600), named by [llm] api_key_file")
    elif found.file is not None and found.file.is_file():
        section.append(key_line("api_key_file", str(found.file)))
        plan.report.carried(what, f"the key stays in {found.file} ([llm] api_key_file)")
    elif found.env is not None:
        section.append(key_line("api_key_env", found.env, "the daemon's environment"))
        plan.report.carried(what, f"the key is read from ${found.env} as before")
    else:
        plan.report.dropped(what, f"{found.file} is not a file: set [llm] api_key_file")


# --- agents: heartbeat, timezone, the rest -----------------------------------------------


def _agents(source: OpenClawDir, plan: ConfigPlan, has_heartbeat_md: bool) -> None:
    defaults = source.defaults()
    zone = _zone(defaults.get("userTimezone"))
    if zone:
        plan.sections.append(["[memory]", key_line("timezone", zone, "the day a note is filed")])
        plan.report.carried("agents.defaults.userTimezone", f"{zone} → [memory] timezone")
    _heartbeat(defaults, plan, has_heartbeat_md, zone)
    known = {"workspace", "model", "models", "heartbeat", "userTimezone", "skipBootstrap"}
    known |= {"utilityModel", "imageModel"}
    rest = sorted(k for k in defaults if k not in known)
    if rest:
        plan.report.dropped("agents.defaults", f"{', '.join(rest)}: no wakeful equivalent")
    agents = source.config.get("agents")
    if isinstance(agents, dict):
        for key in ("list", "entries"):
            roster = agents.get(key)
            if isinstance(roster, list | dict) and len(roster) > 1:
                plan.report.dropped(
                    f"agents.{key}",
                    f"{len(roster)} agents: wakeful is one agent; the default agent's "
                    "workspace was imported",
                )


def _zone(raw: Any) -> str | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        ZoneInfo(raw.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return raw.strip()


def _heartbeat(
    defaults: dict[str, Any], plan: ConfigPlan, has_heartbeat_md: bool, zone: str | None
) -> None:
    raw = defaults.get("heartbeat")
    config = raw if isinstance(raw, dict) else {}
    if not config and not has_heartbeat_md:
        return
    what = "agents.defaults.heartbeat"
    every = config.get("every", "30m")  # OpenClaw's default cadence
    minutes = _minutes(every)
    if minutes is None:
        plan.report.dropped(what, f"every = {every!r} is not a duration such as 30m")
        return
    if minutes == 0:
        plan.report.carried(what, "off in OpenClaw (every 0m): [heartbeat] stays off")
        return
    section = [
        "# Periodic check-ins (docs/heartbeat.md): the model is called only when a check",
        "# found something; HEARTBEAT.md in the workspace is its checklist then.",
        "[heartbeat]",
        "enabled = true",
        key_line("every_minutes", minutes),
    ]
    hours = config.get("activeHours")
    if isinstance(hours, dict):
        start, end = hours.get("start"), hours.get("end")
        if (
            isinstance(start, str)
            and isinstance(end, str)
            and _CLOCK.match(start)
            and _CLOCK.match(end)
        ):
            section.append(key_line("active_hours", f"{start}-{end}"))
        else:
            plan.report.dropped(f"{what}.activeHours", "not HH:MM start and end: all day")
        hours_zone = _zone(hours.get("timezone")) or zone
        if hours_zone:
            section.append(key_line("timezone", hours_zone))
        elif hours.get("timezone"):
            plan.report.changed(
                f"{what}.activeHours.timezone", f"{hours['timezone']!r} is not an IANA zone: UTC"
            )
    elif zone:
        section.append(key_line("timezone", zone))
    plan.sections.append(section)
    plan.heartbeat = True
    plan.report.changed(
        what,
        f"every {minutes} min → [heartbeat]; wakeful's beats call the model only when a "
        "check found something (a due plan item, a finished task, a waiting approval)",
    )
    rest = sorted(set(config) - {"every", "activeHours"})
    if rest:
        plan.report.dropped(what, f"{', '.join(rest)}: no wakeful equivalent")


def _minutes(raw: Any) -> int | None:
    if isinstance(raw, int | float) and not isinstance(raw, bool) and raw >= 0:
        return int(raw)
    match = _DURATION.match(raw) if isinstance(raw, str) else None
    if match is None:
        return None
    amount = float(match.group(1))
    scale = {"s": 1 / 60, "m": 1, "h": 60, "d": 1440}[match.group(2) or "m"]
    minutes = amount * scale
    return 0 if minutes == 0 else max(1, round(minutes))


# --- chat channels -------------------------------------------------------------------------


def _channels(source: OpenClawDir, plan: ConfigPlan) -> None:
    channels = source.config.get("channels")
    if channels is None:
        return
    if not isinstance(channels, dict):
        plan.report.dropped("channels", "not an object: nothing read")
        return
    names: set[str] = set()
    builders: dict[
        str, Callable[[OpenClawDir, ConfigPlan, str, str, dict[str, Any]], list[str] | None]
    ] = {
        "telegram": _telegram,
        "slack": _slack,
        "matrix": _matrix,
    }
    first = True
    for platform in sorted(channels):
        block = channels[platform]
        if platform not in builders:
            reason = (
                "defaults for every channel; wakeful's chat settings are per account"
                if platform in ("defaults", "modelByChannel")
                else f"wakeful has no {platform} channel"
            )
            plan.report.dropped(f"channels.{platform}", reason)
            continue
        if not isinstance(block, dict):
            plan.report.dropped(f"channels.{platform}", "not an object: nothing read")
            continue
        for account, settings, what in _accounts(platform, block, plan):
            if settings.get("enabled") is False:
                plan.report.dropped(what, "enabled: false in OpenClaw: left out")
                continue
            name = _unique(_channel_name(account), names)
            lines = builders[platform](source, plan, name, what, settings)
            if lines is None:
                continue
            if first:
                plan.sections.append(
                    [
                        "# Chat apps (docs/chat.md). Anyone not listed gets a pairing code:",
                        "# `wakeful pairing approve <platform> <code>` lets them in.",
                    ]
                )
                first = False
            plan.sections.append([f"[[chat.{platform}]]", key_line("name", name), *lines])


def _accounts(
    platform: str, block: dict[str, Any], plan: ConfigPlan
) -> list[tuple[str, dict[str, Any], str]]:
    """(account id, its settings, the report's name for it); base settings apply to all."""
    base = {k: v for k, v in block.items() if k not in ("accounts", "defaultAccount")}
    accounts = block.get("accounts")
    if not isinstance(accounts, dict) or not accounts:
        return [("default", base, f"channels.{platform}")]
    found = []
    for account, settings in accounts.items():
        what = f"channels.{platform}.accounts.{account}"
        if isinstance(settings, dict):
            found.append((str(account), {**base, **settings}, what))
        else:
            plan.report.dropped(what, "not an object: nothing read")
    return found


def _channel_name(account: str) -> str:
    name = _CHANNEL_NAME.sub("-", account.lower()).strip("-_")[:32]
    return name if name and name[0].isalnum() else "default"


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate, number = name[: 32 - len(suffix)] + suffix, number + 1
    taken.add(candidate)
    return candidate


def _secret_path(
    source: OpenClawDir, plan: ConfigPlan, found: Secret | None, file_name: str
) -> tuple[Path | None, str]:
    """A file holding the secret, and how it got there (for the report)."""
    if found is None:
        return None, "not found"
    if found.file is not None:
        if not found.file.is_file():
            return None, f"{found.file} is not a file"
        return found.file, f"stays in {found.file}"
    value = found.value
    how = "written to"
    if value is None and found.env is not None:
        value = environment(found.env)
        if value is None:
            return None, f"it is ${{{found.env}}}, which is not set here"
        how = f"read from ${found.env} now, written to"
    if value is None:
        return None, "not found"
    path = plan.secret_file(file_name, value)
    return path, f"{how} {path} (mode 600)"


def _ignored(plan: ConfigPlan, what: str, settings: dict[str, Any], used: set[str]) -> None:
    rest = sorted(set(settings) - used - {"enabled", "name"})
    if rest:
        plan.report.dropped(what, f"{', '.join(rest)}: no wakeful equivalent")


def _allow_list(
    plan: ConfigPlan, what: str, raw: Any, parse: Callable[[str], str | int | None]
) -> list[Any]:
    allowed: list[Any] = []
    skipped: list[str] = []
    for entry in raw if isinstance(raw, list) else []:
        parsed = parse(str(entry).strip())
        if parsed is None:
            skipped.append(str(entry))
        elif parsed not in allowed:
            allowed.append(parsed)
    if skipped:
        plan.report.changed(
            f"{what}.allowFrom",
            f"{len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} left out ("
            + ", ".join(repr(s[:40]) for s in skipped[:5])
            + "): wakeful allows by user id; anyone else gets a pairing code",
        )
    return allowed


def _policy(plan: ConfigPlan, what: str, settings: dict[str, Any]) -> None:
    policy = settings.get("dmPolicy", "pairing")
    if policy in ("open", "disabled"):
        plan.report.changed(
            f"{what}.dmPolicy",
            f"{policy!r}: wakeful gives unknown senders a pairing code (`wakeful pairing approve`)",
        )


def _telegram(
    source: OpenClawDir, plan: ConfigPlan, name: str, what: str, settings: dict[str, Any]
) -> list[str] | None:
    found = secret(source, settings.get("botToken"))
    token_file = settings.get("tokenFile")
    if found is None and isinstance(token_file, str):
        path = source.path(token_file)
        found = Secret(file=path) if path is not None else None
    if found is None and what == "channels.telegram":
        found = Secret(env="TELEGRAM_BOT_TOKEN")  # OpenClaw's fallback, default account only
    token, how = _secret_path(source, plan, found, f"telegram-{name}-token")
    if token is None:
        plan.report.dropped(what, f"no bot token (botToken, tokenFile): {how}")
        return None
    lines = [key_line("bot_token_file", str(token))]
    allowed = _allow_list(plan, what, settings.get("allowFrom"), _telegram_id)
    if allowed:
        lines.append(key_line("allowed_user_ids", allowed))
    api_root = settings.get("apiRoot")
    if isinstance(api_root, str) and api_root.startswith("http"):
        lines.append(key_line("api_base", api_root.rstrip("/")))
    if settings.get("webhookUrl"):
        plan.report.changed(
            f"{what}.webhookUrl",
            "wakeful polls (mode = polling); for a webhook set mode, public_url and "
            "secret_token_file (docs/telegram.md)",
        )
    _policy(plan, what, settings)
    plan.report.carried(what, f"[[chat.telegram]] {name}: bot token {how}")
    used = {"botToken", "tokenFile", "allowFrom", "apiRoot", "webhookUrl", "dmPolicy"}
    used |= {"webhookSecret", "webhookPath"}
    _ignored(plan, what, settings, used)
    return lines


def _telegram_id(entry: str) -> int | None:
    for prefix in ("telegram:", "tg:"):
        entry = entry.removeprefix(prefix)
    return int(entry) if entry.isdigit() and 0 < int(entry) < 2**53 else None


def _slack(
    source: OpenClawDir, plan: ConfigPlan, name: str, what: str, settings: dict[str, Any]
) -> list[str] | None:
    signing_found = secret(source, settings.get("signingSecret"))
    if signing_found is None:
        plan.report.dropped(
            what,
            "no signingSecret: wakeful's Slack receives the Events API over HTTPS, which "
            "needs one; Socket Mode (appToken) is not there (docs/slack.md)",
        )
        return None
    found = secret(source, settings.get("botToken"))
    if found is None and what == "channels.slack":
        found = Secret(env="SLACK_BOT_TOKEN")
    token, how = _secret_path(source, plan, found, f"slack-{name}-token")
    signing, signing_how = _secret_path(source, plan, signing_found, f"slack-{name}-signing-secret")
    if token is None or signing is None:
        plan.report.dropped(what, f"bot token {how}; signing secret {signing_how}")
        return None
    lines = [key_line("bot_token_file", str(token)), key_line("signing_secret_file", str(signing))]
    allowed = _allow_list(plan, what, settings.get("allowFrom"), _slack_id)
    if allowed:
        lines.append(key_line("allowed_user_ids", allowed))
    _policy(plan, what, settings)
    plan.report.changed(
        what,
        f"[[chat.slack]] {name}: bot token {how}; the Events API request URL becomes "
        f"https://<your host>/chat/slack/{name}/events",
    )
    used = {"botToken", "signingSecret", "allowFrom", "dmPolicy", "appToken", "mode"}
    _ignored(plan, what, settings, used)
    return lines


def _slack_id(entry: str) -> str | None:
    entry = entry.removeprefix("user:").removeprefix("slack:")
    return entry if re.fullmatch(r"[UW][A-Z0-9]{2,20}", entry) else None


def _matrix(
    source: OpenClawDir, plan: ConfigPlan, name: str, what: str, settings: dict[str, Any]
) -> list[str] | None:
    homeserver, user_id = settings.get("homeserver"), settings.get("userId")
    if not isinstance(homeserver, str) or not homeserver.startswith("http"):
        plan.report.dropped(what, "no homeserver URL")
        return None
    if not isinstance(user_id, str) or not re.fullmatch(r"@[^:\s]+:\S+", user_id):
        plan.report.dropped(what, "no userId (@name:server): wakeful needs it; add it")
        return None
    lines = [key_line("homeserver", homeserver), key_line("user_id", user_id)]
    token = secret(source, settings.get("accessToken"))
    if token is not None:
        path, how = _secret_path(source, plan, token, f"matrix-{name}-token")
        key = "access_token_file"
    else:
        path, how = _secret_path(
            source, plan, secret(source, settings.get("password")), f"matrix-{name}-password"
        )
        key = "password_file"
    if path is None:
        plan.report.dropped(what, f"no accessToken or password: {how}")
        return None
    lines.append(key_line(key, str(path)))
    allowed = _allow_list(
        plan,
        what,
        settings.get("allowFrom"),
        lambda e: e if re.fullmatch(r"@[^:\s]+:\S+", e) else None,
    )
    if allowed:
        lines.append(key_line("allowed_users", allowed))
    _policy(plan, what, settings)
    plan.report.carried(what, f"[[chat.matrix]] {name}: {key.removesuffix('_file')} {how}")
    _ignored(
        plan,
        what,
        settings,
        {"homeserver", "userId", "accessToken", "password", "allowFrom", "dmPolicy"},
    )
    return lines


# --- gateway and skills settings ------------------------------------------------------------


def _gateway_and_skills(source: OpenClawDir, plan: ConfigPlan) -> None:
    if "gateway" in source.config:
        plan.report.dropped(
            "gateway",
            "OpenClaw's gateway (port, auth token, remote access) has no counterpart: wakeful "
            "serves [server] bind (127.0.0.1:8787) with its own admin token",
        )
    skills = source.config.get("skills")
    if not isinstance(skills, dict):
        return
    entries = skills.get("entries")
    table: dict[str, Any] = entries if isinstance(entries, dict) else {}
    for skill in sorted(table):
        settings = table[skill]
        if isinstance(settings, dict) and (settings.get("env") or settings.get("apiKey")):
            plan.report.dropped(
                f"skills.entries.{skill}",
                "its env/apiKey are not carried: set them in the daemon's environment",
            )
        elif isinstance(settings, dict) and settings.get("enabled") is False:
            plan.report.changed(
                f"skills.entries.{skill}", "disabled in OpenClaw: its folder is not copied"
            )
    load = skills.get("load")
    if isinstance(load, dict) and load.get("extraDirs"):
        plan.report.dropped(
            "skills.load.extraDirs",
            "extra skill folders are not copied: add them to [skills] paths",
        )


def disabled_skills(source: OpenClawDir) -> set[str]:
    skills = source.config.get("skills")
    entries = skills.get("entries") if isinstance(skills, dict) else None
    if not isinstance(entries, dict):
        return set()
    return {
        str(name)
        for name, settings in entries.items()
        if isinstance(settings, dict) and settings.get("enabled") is False
    }
