"""Step 2 of the start: the safety layer and the built-in tools, before any component
declares its own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio

from wakeful.app.config import Settings
from wakeful.app.startup.resources import Opened
from wakeful.core.components.context import Registrations
from wakeful.core.components.gate import EventGate
from wakeful.core.loop.session_scope import SessionScope, SessionScopes
from wakeful.core.provider import ModelProvider
from wakeful.core.tool_output import saved_outputs_dir
from wakeful.core.tool_registry import ToolRegistry
from wakeful.mcp.config import namespaced
from wakeful.safety.assembly import Safety, build_safety
from wakeful.safety.review_model import ProviderReviewModel
from wakeful.safety.sandbox import Sandbox, daemon_sandbox
from wakeful.skills.catalog import SkillCatalog, discover_skills
from wakeful.skills.load_skill import LoadSkill
from wakeful.store.base import Store
from wakeful.tools.registry import default_registry
from wakeful.tools.search_tools import SearchTools
from wakeful.tools.tool_surface import ToolSurface


@dataclass(frozen=True)
class Armed:
    """Step 2: the safety layer and the tools, before any component declares its own."""

    safety: Safety
    tools: ToolRegistry
    surface: ToolSurface
    skills: SkillCatalog
    scopes: SessionScopes
    registrations: Registrations
    workspace: Path
    output_dir: Path


class SandboxProbe:
    """The shell sandbox, probed in a worker thread: its probe runs `true` in bubblewrap
    and waits tens of ms on the child, meanwhile the lifespan imports and builds the
    components. Started once the store is open, so a start that fails before (a port in
    use, an unreachable store) probes and logs nothing of the sandbox."""

    def __init__(self, settings: Settings, data_dir: Path) -> None:
        self._settings = settings
        self._data_dir = data_dir
        self._sandbox: Sandbox | None = None
        self._running = anyio.Event()
        self._done = anyio.Event()

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        """Returns once the probe's thread runs. to_thread.run_sync yields to the event
        loop before it hands the work over, and what the caller does next (importing
        the components) holds the loop: returning any earlier ran the probe after it."""
        group.start_soon(self._run, name="sandbox probe")
        await self._running.wait()

    async def sandbox(self) -> Sandbox:
        await self._done.wait()
        assert self._sandbox is not None
        return self._sandbox

    async def _run(self) -> None:
        self._sandbox = await anyio.to_thread.run_sync(self._probe)
        self._done.set()

    def _probe(self) -> Sandbox:
        anyio.from_thread.run_sync(self._running.set)
        return daemon_sandbox(self._settings, self._data_dir)


def arm(settings: Settings, opened: Opened, gate: EventGate, sandbox: Sandbox) -> Armed:
    data_dir, store, provider = opened.data_dir, opened.store, opened.provider
    workspace = settings.safety.workspace_path(data_dir)
    output_dir = saved_outputs_dir(data_dir)
    workspace.mkdir(parents=True, exist_ok=True)
    output_dir.mkdir(exist_ok=True)
    # What components narrow per session (subagents): declared while they configure.
    session_scopes: list[SessionScope] = []
    scopes = SessionScopes(session_scopes)
    safety = build_safety(
        settings.safety,
        store,
        data_dir=data_dir,
        review_model=_review_model(settings, provider),
        tool_scope=scopes,
        skill_roots=settings.skills.skill_roots(data_dir),
        mcp_prefixes=[namespaced(server.name, "") for server in settings.mcp.servers],
        approval_effects=gate.approval_effects(),
        shared=settings.store.fleet,
    )
    tools = default_registry(
        default_timeout_s=settings.loop.tool_timeout_s,
        shell_grace_s=settings.loop.stop_grace_s,
        outputs_max_bytes=settings.loop.outputs_max_mb * 1024 * 1024,
        http_allow=settings.safety.http_allow,
        sandbox=sandbox,
        state=store,  # the ledger of files the agent wrote survives restarts
        owner_requests=safety.approvals,
    )
    skills = discover_skills(settings.skills.skill_roots(data_dir))
    surface = _tool_surface(settings, tools, store, skills, scopes)
    registrations = Registrations(tools, session_scopes=session_scopes)
    registrations.status_providers["sandbox"] = sandbox.status
    tools.guard_with(safety.chain)  # every call, whoever registered the tool
    return Armed(safety, tools, surface, skills, scopes, registrations, workspace, output_dir)


def _tool_surface(
    settings: Settings,
    tools: ToolRegistry,
    store: Store,
    skills: SkillCatalog,
    scopes: SessionScopes,
) -> ToolSurface:
    """The surface over ``tools``, with the two tools that belong to it: search_tools,
    and load_skill when there are skills to load."""
    surface = ToolSurface(
        tools,
        store,
        defer=settings.tools.defer,
        defer_above=settings.tools.defer_above,
        scope=scopes,
    )
    tools.register(SearchTools(tools, surface))
    if len(skills):
        tools.register(LoadSkill(skills))
    return surface


def _review_model(settings: Settings, provider: ModelProvider) -> ProviderReviewModel | None:
    model = settings.safety.reviewer_model
    if not (model and provider.configured):
        return None
    return ProviderReviewModel(provider, model, settings.daemon.system_prompt)
