"""docs/architecture.md's four recipes, each followed to the letter and run in a daemon.

A provider, a tool, a source and a channel live in this file, and each is
registered with exactly the one line its recipe names (through the registry
it names: monkeypatched, so the real lists stay as shipped). Each then does its
job through a real daemon on ``tmp_path``: the provider answers a message, the
model calls the tool, the source's event reaches the model, the channel
delivers a reply. The doc's module paths are checked too, so it cannot rot.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus

from tests.daemon_harness import daemon_settings, harness, last_user_text, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.app import components
from wakeful.app.components import COMPONENTS, Registration
from wakeful.app.config import ConfigError, LlmSection, load_settings
from wakeful.app.startup import armour
from wakeful.core.components.context import ComponentSetup
from wakeful.core.effects import Effect
from wakeful.core.outbox.channels import Receipt
from wakeful.core.provider import DeltaCallback, ModelRequest, ModelResponse, Usage
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.core.tool_registry import ToolRegistry
from wakeful.kernel.events import Event, user_message
from wakeful.llm.registry import PROVIDERS, ProviderEntry, load
from wakeful.store.outbox.record import OutgoingMessage
from wakeful.tools.registry import default_registry

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent
HERE = __name__  # import paths below name this module, however pytest imported it


# -- a provider: its module (here, this file) and one line in PROVIDERS --------------


class EchoProvider:
    """A model that repeats the last thing it was told."""

    def __init__(self, model: str) -> None:
        self._model = model
        self.calls = 0

    @property
    def configured(self) -> bool:
        return True

    def describe(self) -> str:
        return f"echo model {self._model!r}"

    async def complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        self.calls += 1
        text = f"Echo: {last_user_text({'messages': request.messages})}"
        if on_delta is not None:
            await on_delta(text)
        return ModelResponse(text, (), "stop", Usage(), self._model, 0.0)

    async def aclose(self) -> None:
        return None


def echo_from_config(llm: LlmSection, api_key: str | None) -> EchoProvider:
    return EchoProvider(llm.model)


async def test_a_provider_is_its_module_plus_one_registry_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PROVIDERS, "echo", ProviderEntry(f"{HERE}:echo_from_config"))  # the line
    settings = daemon_settings(
        tmp_path, "http://127.0.0.1:9/v1", llm={"provider": "echo", "model": "echo-1"}
    )
    assert settings.llm.api_key_env == "OPENAI_API_KEY"  # the entry's defaults apply
    async with harness(settings) as h:
        assert isinstance(h.daemon.provider, EchoProvider)
        async with watch_feed(h) as feed:
            await h.send("hello, recipe")
            answer = await feed.wait_for(lambda i: str(i.get("text", "")).startswith("Echo:"))
    assert "hello, recipe" in answer["text"]
    assert h.daemon.provider.calls == 1


def test_an_unknown_provider_is_one_line_naming_the_key_and_the_choices(tmp_path: Path) -> None:
    config = tmp_path / "wakeful.toml"
    config.write_text('[llm]\nprovider = "gemini"\nmodel = "m"\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    message = str(refused.value)
    assert "\n" not in message
    assert "'llm.provider': not a known provider; choose one of: openai, anthropic" in message
    assert "(got 'gemini')" in message


def test_today_s_provider_names_and_defaults_still_load() -> None:
    """A config written before the registry starts unchanged."""
    assert LlmSection().provider == "openai"
    assert LlmSection().base_url == "https://api.openai.com/v1"
    anthropic = LlmSection(provider="anthropic", model="claude")
    assert (anthropic.base_url, anthropic.api_key_env) == (
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
    )
    for name, entry in PROVIDERS.items():
        assert callable(load(entry.factory)), name


# -- a tool: its module and one entry in default_registry's list ---------------------


class Shout:
    name = "shout"
    description = 'Say the text in capitals. Example: {"text": "hello"}'
    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 5.0

    class Args(ToolArgs):
        text: str

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(a.text.upper())


async def test_a_tool_is_its_module_plus_one_registry_entry(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def with_shout(**kwargs: Any) -> ToolRegistry:
        registry = default_registry(**kwargs)
        registry.register(Shout())  # the line: Shout() in default_registry's list
        return registry

    monkeypatch.setattr(armour, "default_registry", with_shout)
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("shout", {"text": "quiet please"}, id="call_shout")]),
        Reply(text="Shouted."),
    )
    settings = daemon_settings(tmp_path, model_server.base_url)
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("shout something")
        await feed.wait_for(lambda i: i.get("text") == "Shouted.")
    after_call = model_server.requests[1].body["messages"]
    results = [m for m in after_call if m["role"] == "tool" and m["tool_call_id"] == "call_shout"]
    assert len(results) == 1 and "QUIET PLEASE" in results[0]["content"]


# -- a source: its package and one Registration line in app/components.py ------------


class KettleSource:
    """A source: it notices something in the world and submits it as an event."""

    name = "kettle"

    async def configure(self, setup: ComponentSetup) -> None:
        self._submit = setup.submit

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        event = Event.parse(
            {
                "id": "kettle:1",  # a natural id: a repeat is dropped by the store
                "kind": "kettle.boiled",
                "source": {"type": "kettle"},
                "channel": "kettle",
                "content": {"text": "the kettle boiled at 98 degrees"},
            }
        )
        await self._submit(event)
        await anyio.sleep_forever()


async def test_a_source_is_its_package_plus_one_registration_line(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        components, "COMPONENTS", [*COMPONENTS, Registration(f"{HERE}:KettleSource")]
    )
    model_server.push(Reply(text="Tea time."))
    async with harness(daemon_settings(tmp_path, model_server.base_url)):
        # The source submits from its run(), before the harness is handed over: no
        # feed subscription could be sure to see it, the model's request is.
        await anyio.to_thread.run_sync(model_server.wait_for_requests, 1)
    sent = json.dumps(model_server.requests[0].body["messages"])
    assert "the kettle boiled at 98 degrees" in sent
    assert "kettle.boiled" in sent


# -- a channel: its package and one Registration line in app/components.py -----------


class PostcardChannel:
    """Where the outbox hands messages for "postcard"; records what it took."""

    name = "postcard"
    resend_safe = False

    def __init__(self) -> None:
        self.delivered: list[OutgoingMessage] = []
        self.changed = anyio.Event()

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        self.delivered.append(message)
        self.changed.set()
        return Receipt(self.name, "posted a postcard")


class PostcardComponent:
    """A channel: the owner writes in by post; replies go back the same way."""

    name = "postcard"

    def __init__(self) -> None:
        self.channel = PostcardChannel()

    async def configure(self, setup: ComponentSetup) -> None:
        setup.add_channel(self.channel)
        self._submit = setup.submit

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        # The owner, authenticated by the channel (as a chat platform's sender check does).
        await self._submit(user_message("hello by post", channel="postcard", event_id="pc:1"))
        await anyio.sleep_forever()


async def test_a_channel_is_its_package_plus_one_registration_line(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        components, "COMPONENTS", [*COMPONENTS, Registration(f"{HERE}:PostcardComponent")]
    )
    model_server.push(
        Reply(
            tool_calls=[
                ToolCallSpec("reply_to_user", {"text": "Greetings by return"}, id="call_reply")
            ]
        ),
        Reply(),
    )
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        [channel] = [c for c in h.running.registrations.channels if c.name == "postcard"]
        assert isinstance(channel, PostcardChannel)
        with anyio.fail_after(10):
            while not channel.delivered:
                await channel.changed.wait()
                channel.changed = anyio.Event()
        await anyio.to_thread.run_sync(model_server.wait_for_requests, 2)
    assert [m.text for m in channel.delivered] == ["Greetings by return"]
    assert channel.delivered[0].answers == "pc:1"
    [result] = [m for m in model_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "call_reply" and "posted a postcard" in result["content"]


# -- the registries themselves --------------------------------------------------------


@pytest.mark.parametrize("registration", COMPONENTS, ids=lambda r: r.path)
def test_every_registration_names_a_factory_of_the_right_arity(
    registration: Registration,
) -> None:
    factory = load(registration.path)
    assert callable(factory)
    arguments = [object()] if registration.each is not None else []
    inspect.signature(factory).bind(*arguments)  # raises when the arity is wrong


def test_start_up_imports_no_unconfigured_channel_and_no_model_sdk(tmp_path: Path) -> None:
    """A fresh interpreter (this one has imported everything): the default components
    and the provider of a config with no model leave the email, chat platform and MCP
    components and both SDKs unimported."""
    script = (
        "import sys\n"
        "from wakeful.app.config import Settings\n"
        "from wakeful.app.components import default_components\n"
        "from wakeful.app.startup.resources import make_provider\n"
        "settings = Settings()\n"
        "default_components(settings)\n"
        "make_provider(settings.llm, None)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith("WAKEFUL_")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "wakeful.sources.webhook.component" in loaded  # the check sees imports at all
    # Their config sections are imported (Settings is composed of them), not their code.
    for absent in (
        "wakeful.channels.email.component",
        "wakeful.channels.telegram.component",
        "wakeful.channels.slack.component",
        "wakeful.channels.matrix.component",
        "wakeful.mcp.component",
        "wakeful.llm.openai_provider",
        "openai",
        "anthropic",
    ):
        assert absent not in loaded, absent


# -- docs/architecture.md names only what exists --------------------------------------

DOC = ROOT / "docs" / "architecture.md"
PATH = re.compile(r"`((?:wakeful|tests)/[\w/.-]*)`")
SYMBOL = re.compile(r"`(\w+(?:\.\w+)*)`\s+in\s+`((?:wakeful|tests)/[\w/]+\.py)`")


def _layout_names() -> Iterator[tuple[str, str]]:
    """(package, name) for each path the README's layout section names: a relative
    name lies somewhere inside the package named last before it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How it is built", 1)[1].split("\n## ", 1)[0]
    for item in section.split("\n- ")[1:]:
        package = ""
        for name in re.findall(r"`([\w/.<>-]+)`", item):
            if name.startswith("wakeful/"):
                package = name
                yield "", name
            elif re.fullmatch(r"[\w/]+(\.py|/)", name):
                yield package, name


def test_every_path_the_architecture_doc_names_exists() -> None:
    paths = PATH.findall(DOC.read_text(encoding="utf-8"))
    assert len(paths) > 30  # the doc names the real modules
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_every_path_the_readme_layout_names_exists() -> None:
    names = list(_layout_names())
    assert len(names) > 30
    missing = [
        f"{package}{name}"
        for package, name in names
        if not (ROOT / package / name).exists()
        and not any((ROOT / package).rglob(name.rstrip("/")))
    ]
    assert missing == []


def test_every_symbol_the_architecture_doc_places_in_a_module_is_there() -> None:
    """Each "`Name` in `path`" and "`Class.method` in `path`": defined in that file."""
    symbols = SYMBOL.findall(DOC.read_text(encoding="utf-8"))
    assert len(symbols) > 20
    for symbol, path in symbols:
        source = (ROOT / path).read_text(encoding="utf-8")
        first = symbol.split(".")[0]
        assert re.search(rf"^\s*(class|def|async def) {first}\b|^{first}\b", source, re.M), (
            f"{symbol} is not in {path}"
        )
        for part in symbol.split(".")[1:]:
            assert re.search(rf"def {part}\b", source), f"{symbol} is not in {path}"
