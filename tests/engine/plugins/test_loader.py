"""plugin.toml loading: every plugin type loads and works; a broken plugin is named and skipped."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.messages import ToolCallRequest
from custom_components.companion_agent.engine.plugins import (
    HostServices,
    LoadProblem,
    PluginSet,
    ProactiveRequest,
    Profile,
    TurnContext,
    load_library,
    load_plugins,
)
from custom_components.companion_agent.engine.plugins.loader import PACKAGE
from custom_components.companion_agent.engine.tools.contract import ToolContext
from custom_components.companion_agent.engine.tools.registry import ToolRegistry

from .samples import ENGINE, HOOK_CODE, HOOK_TOML, write_plugin, write_profile, write_samples

ALL = '["echo", "recorder", "ticker", "shout"]'
HEAD = '[plugin]\nid = "bad"\ntype = "tool"\nentry = "plugin:X"\n'


def load_profile(root: Path, enabled: str = ALL, overrides: str = "") -> Profile:
    """Write a profile enabling ``enabled`` under ``root`` and load it."""
    write_profile(root, "test", f"[plugins]\nenabled = {enabled}\n{textwrap.dedent(overrides)}")
    library = load_library([root])
    assert library.problems == ()
    profile = library.profiles.get("test")
    assert profile is not None
    return profile


def only_problem(problems: tuple[LoadProblem, ...]) -> LoadProblem:
    """Return the single problem."""
    assert len(problems) == 1, problems
    return problems[0]


async def test_each_plugin_type_loads_and_works(tmp_path: Path, host: HostServices) -> None:
    """A tool, a hook, a trigger and a transformer plugin load from plugin.toml and run."""
    write_samples(tmp_path)
    library = load_library([tmp_path])
    assert library.problems == ()
    assert set(library.catalog.plugins) == {"echo", "recorder", "ticker", "shout"}
    profile = load_profile(tmp_path)
    plugins = library.activate(profile, host)
    assert plugins.problems == ()
    assert plugins.transforms  # "shout": the turn's voice does not guess its first sentence
    assert not library.activate(load_profile(tmp_path, '["echo", "recorder"]'), host).transforms

    registry = ToolRegistry(plugins.tools)
    call = ToolCallRequest(call_id="c1", name="echo", arguments='{"text": "hi"}')
    outcome = await registry.execute(call, ToolContext(conversation_id="c"))
    assert outcome.content == "echo: hi"

    ctx = TurnContext(conversation_id="c", profile_id="test")
    snippets = await plugins.hooks.before_turn("hello", ctx)
    assert [(s.source, s.text) for s in snippets] == [("recorder", "the cat is called Mochi")]

    emitted: list[ProactiveRequest] = []

    async def emit(request: ProactiveRequest) -> None:
        """Record a proactive request."""
        emitted.append(request)

    await plugins.start_triggers(emit)
    await asyncio.sleep(0)
    assert emitted == [ProactiveRequest(source="ticker", prompt="Say good morning.")]

    async def stream() -> AsyncIterator[OutputItem]:
        """Yield a sentence and a tool event."""
        yield SentenceOutput(display_text="hello there", tts_text="hello there")
        yield ToolCallEvent(tool_id="t", tool_name="x", args={}, status="running")

    out = [item async for item in plugins.transform(stream())]
    assert isinstance(out[0], SentenceOutput)
    assert out[0].display_text == "HELLO THERE"
    assert isinstance(out[1], ToolCallEvent)
    await plugins.close()
    ticker = plugins.get("ticker")
    assert getattr(ticker, "stopped", False) is True


async def test_profile_overrides_reach_the_plugin(tmp_path: Path, host: HostServices) -> None:
    """``[plugins.echo] prefix`` in a profile replaces the plugin.toml default."""
    write_samples(tmp_path)
    profile = load_profile(tmp_path, '["echo"]', '[plugins.echo]\nprefix = "> "\n')
    plugins = PluginSet.build(load_plugins([tmp_path]), profile, host)
    call = ToolCallRequest(call_id="c1", name="echo", arguments='{"text": "hi"}')
    outcome = await ToolRegistry(plugins.tools).execute(call, ToolContext(conversation_id="c"))
    assert outcome.content == "> hi"
    assert plugins.plugin_ids == ("echo",)


@pytest.mark.parametrize(
    ("toml", "key", "words"),
    [
        (HEAD + 'author = "me"\n', "plugin.author", "unknown key"),
        (HEAD.replace('"tool"', '"widget"'), "plugin.type", "unknown type"),
        (HEAD.replace('"plugin:X"', '"plugin"'), "plugin.entry", "module:Class"),
        (HEAD.replace('"bad"', '"Bad Id"'), "plugin.id", "lower-case"),
        (HEAD.replace('"bad"', '"confirmations"'), "plugin.id", "reserved"),
        (HEAD.replace('id = "bad"\n', ""), "plugin.id", "required"),
        (HEAD + "[config]\nt = { a = 1 }\n", "config.t", "table"),
        (HEAD + '[config]\nl = [1, "a"]\n', "config.l", "one type"),
        (HEAD + "[extra]\n", "extra", "unknown key"),
        ('[plugin\nid = "bad"\n', "(toml)", "not valid TOML"),
        ("[config]\nx = 1\n", "plugin", "required"),
        ('[plugin]\ntype = "tool"\n', "plugin.entry", "is required (and 1 more problem)"),
        (HEAD.replace('"tool"', "[]"), "plugin.type", "or an array of them"),
        (HEAD.replace('"tool"', '["tool", 3]'), "plugin.type", "unknown type"),
        (HEAD + "name = 1\n", "plugin.name", "expected a string, got an integer"),
        (HEAD + "[config]\nd = 1979-05-27\n", "config.d", "a date/time is not supported"),
    ],
)
def test_malformed_plugin_toml_names_file_and_key(
    tmp_path: Path, toml: str, key: str, words: str
) -> None:
    """Each mistake is reported with the file and the key; the good plugin still loads."""
    write_plugin(tmp_path, "good", HOOK_TOML, {"plugin.py": HOOK_CODE})
    bad = write_plugin(tmp_path, "bad", toml, {"plugin.py": "X = 1\n"})
    catalog = load_plugins([tmp_path])
    problem = only_problem(catalog.problems)
    assert (problem.kind, problem.path, problem.key) == ("plugin", bad / "plugin.toml", key)
    assert words in problem.message
    assert str(bad / "plugin.toml") in str(problem)
    assert set(catalog.plugins) == {"recorder"}


@pytest.mark.parametrize(
    ("code", "key", "words"),
    [
        ("raise RuntimeError('boom')\n", "plugin.entry", "RuntimeError: boom"),
        ("def broken(:\n", "plugin.entry", "SyntaxError"),
        ("class Other:\n    pass\n", "plugin.entry", "not a Plugin class"),
        (
            f"from {ENGINE}.plugins import HookPlugin\nclass X(HookPlugin):\n    pass\n",
            "plugin.type",
            "no ToolPlugin",
        ),
    ],
)
def test_broken_plugin_code_is_reported_and_skipped(
    tmp_path: Path, code: str, key: str, words: str
) -> None:
    """Code that fails to import or does not match its declared type is a named problem."""
    write_plugin(tmp_path, "good", HOOK_TOML, {"plugin.py": HOOK_CODE})
    toml = HEAD + ""
    bad = write_plugin(tmp_path, "bad", toml, {"plugin.py": code})
    catalog = load_plugins([tmp_path])
    problem = only_problem(catalog.problems)
    assert (problem.path, problem.key) == (bad / "plugin.toml", key)
    assert words in problem.message
    assert set(catalog.plugins) == {"recorder"}
    assert "bad" in catalog.failed


async def test_plugin_failing_at_construction_is_left_out(
    tmp_path: Path, host: HostServices
) -> None:
    """A constructor that raises becomes a problem of the plugin set; the others run."""
    write_samples(tmp_path)
    code = HOOK_CODE.replace("self.calls = []", "raise ValueError('no way')")
    write_plugin(tmp_path, "recorder", HOOK_TOML, {"plugin.py": code})
    plugins = load_library([tmp_path]).activate(load_profile(tmp_path), host)
    problem = only_problem(plugins.problems)
    assert (problem.key, problem.path.parent.name) == ("plugin.entry", "recorder")
    assert "ValueError: no way" in problem.message
    assert plugins.plugin_ids == ("echo", "ticker", "shout")


def test_later_root_replaces_a_plugin_and_reload_reimports(tmp_path: Path) -> None:
    """A user root overrides a built-in with the same id; reloading runs the new code."""
    builtin, user = tmp_path / "builtin", tmp_path / "user"
    write_plugin(builtin, "recorder", HOOK_TOML, {"plugin.py": HOOK_CODE})
    assert load_plugins([builtin]).plugins["recorder"].manifest.folder.parent.parent == builtin
    write_plugin(user, "mine", HOOK_TOML, {"plugin.py": HOOK_CODE + "VERSION = 1\n"})
    catalog = load_plugins([builtin, user])
    loaded = catalog.plugins["recorder"]
    assert loaded.manifest.folder == user / "plugins" / "mine"
    assert loaded.factory.__module__ == f"{PACKAGE}.recorder.plugin"
    write_plugin(user, "mine", HOOK_TOML, {"plugin.py": HOOK_CODE + "VERSION = 22\n"})
    reloaded = load_plugins([builtin, user]).plugins["recorder"].factory
    module = __import__(reloaded.__module__, fromlist=["VERSION"])
    assert module.VERSION == 22
    assert reloaded is not loaded.factory


def test_two_plugins_with_one_id_in_one_root(tmp_path: Path) -> None:
    """The second folder claiming an id is reported; the first keeps it."""
    write_plugin(tmp_path, "a", HOOK_TOML, {"plugin.py": HOOK_CODE})
    second = write_plugin(tmp_path, "b", HOOK_TOML, {"plugin.py": HOOK_CODE})
    catalog = load_plugins([tmp_path])
    problem = only_problem(catalog.problems)
    assert (problem.path, problem.key) == (second / "plugin.toml", "plugin.id")
    assert catalog.plugins["recorder"].manifest.folder.name == "a"
