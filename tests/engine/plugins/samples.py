"""Plugin folders written into temporary roots (one sample per plugin type), and a test clock."""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

from custom_components.companion_agent.engine.plugins import (
    HostServices,
    PluginSet,
    builtin_roots,
    load_library,
)

ENGINE = "custom_components.companion_agent.engine"

TOOL_TOML = """
[plugin]
id = "echo"
type = "tool"
entry = "plugin:EchoPlugin"

[config]
prefix = "echo: "
"""
TOOL_CODE = f"""
from {ENGINE}.plugins import ToolPlugin
from {ENGINE}.tools.contract import ToolSpec
from {ENGINE}.tools.registry import Tool


class EchoPlugin(ToolPlugin):
    def tools(self):
        prefix = self.context.config.text("prefix")

        async def echo(args, ctx):
            return prefix + str(args.get("text", ""))

        schema = {{"type": "object", "properties": {{"text": {{"type": "string"}}}}}}
        spec = ToolSpec(name="echo", description="Echo", parameters=schema)
        return [Tool(spec=spec, handler=echo)]
"""

HOOK_TOML = """
[plugin]
id = "recorder"
type = "hook"
entry = "plugin:RecorderPlugin"

[config]
note = "the cat is called Mochi"
"""
HOOK_CODE = f"""
from {ENGINE}.plugins import HookPlugin


class RecorderPlugin(HookPlugin):
    def __init__(self, context):
        super().__init__(context)
        self.calls = []

    async def on_before_turn(self, user_text, ctx):
        self.calls.append(("before", user_text))
        return self.context.config.text("note")

    async def on_after_turn(self, user_text, assistant_text, ctx):
        self.calls.append(("after", assistant_text))
"""

TRIGGER_TOML = """
[plugin]
id = "ticker"
type = "trigger"
entry = "plugin:TickerPlugin"

[config]
prompt = "Say good morning."
"""
TRIGGER_CODE = f"""
import asyncio

from {ENGINE}.plugins import ProactiveRequest, TriggerPlugin


class TickerPlugin(TriggerPlugin):
    task = None

    async def start(self, emit):
        request = ProactiveRequest(source=self.plugin_id, prompt=self.context.config.text("prompt"))
        self.task = asyncio.create_task(emit(request))

    async def stop(self):
        self.stopped = True
"""

TRANSFORMER_TOML = """
[plugin]
id = "shout"
type = "transformer"
entry = "stage:ShoutPlugin"
"""
TRANSFORMER_CODE = f"""
import dataclasses

from {ENGINE}.events import SentenceOutput
from {ENGINE}.plugins import TransformerPlugin

from .words import shout


class ShoutPlugin(TransformerPlugin):
    async def transform(self, items):
        async for item in items:
            if isinstance(item, SentenceOutput):
                item = dataclasses.replace(item, display_text=shout(item.display_text))
            yield item
"""
TRANSFORMER_HELPER = """
def shout(text):
    return text.upper()
"""


def write_plugin(root: Path, folder: str, toml: str, files: dict[str, str]) -> Path:
    """Write ``root/plugins/<folder>/`` with a plugin.toml and code files; return the folder."""
    path = root / "plugins" / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "plugin.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    for name, code in files.items():
        (path / name).write_text(textwrap.dedent(code), encoding="utf-8")
    return path


def write_samples(root: Path) -> None:
    """Write one working plugin of each type under ``root``."""
    write_plugin(root, "echo", TOOL_TOML, {"plugin.py": TOOL_CODE})
    write_plugin(root, "recorder", HOOK_TOML, {"plugin.py": HOOK_CODE})
    write_plugin(root, "ticker", TRIGGER_TOML, {"plugin.py": TRIGGER_CODE})
    write_plugin(
        root,
        "shout",
        TRANSFORMER_TOML,
        {"stage.py": TRANSFORMER_CODE, "words.py": TRANSFORMER_HELPER},
    )


def write_profile(root: Path, name: str, text: str) -> Path:
    """Write ``root/profiles/<name>.toml``; return its path."""
    path = root / "profiles" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


class Clock:
    """A clock the test moves."""

    def __init__(self, now: datetime) -> None:
        """Start at ``now``."""
        self.now = now

    def __call__(self) -> datetime:
        """Return the current test time."""
        return self.now


def activate(root: Path, host: HostServices, profile_text: str) -> PluginSet:
    """Load the shipped plugins plus a test profile from ``root`` and build its plugins."""
    write_profile(root, "test", profile_text)
    library = load_library([*builtin_roots(), root])
    profile = library.profiles.get("test")
    assert profile is not None
    assert library.problems == ()
    return library.activate(profile, host)
