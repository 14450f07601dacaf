"""The plugins a host loads and uses: the ``Library`` of plugins and profiles, the ``PluginSet``.

``load_library`` loads the plugin catalog and the profiles from the same roots, the one call a
host makes; ``Library.activate`` builds the ``PluginSet`` one profile enables, for one host and
ready to use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigFileError
from ..events import OutputItem
from ..tools.registry import Tool
from .hooks import HookManager
from .loader import LoadedPlugin, LoadProblem, PluginCatalog, load_plugins
from .plugin import (
    HookPlugin,
    HostServices,
    Plugin,
    PluginContext,
    ProactiveEmitter,
    ToolPlugin,
    TransformerPlugin,
    TriggerPlugin,
)
from .profiles import EnabledPlugin, Profile, ProfileLibrary

LOGGER = logging.getLogger(__name__)

LIFECYCLE_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Member:
    """One built plugin and the roles its plugin.toml declares."""

    plugin: Plugin
    loaded: LoadedPlugin

    def plays(self, kind: str) -> bool:
        """Return whether plugin.toml declares ``kind`` for this plugin."""
        return kind in self.loaded.manifest.types


class PluginSet:
    """A profile's plugins for one host: tools, hooks, triggers and transformers."""

    def __init__(
        self, members: Sequence[_Member], hooks: HookManager, problems: Sequence[LoadProblem] = ()
    ) -> None:
        """Hold built plugins; use ``PluginSet.build``."""
        self._members = tuple(members)
        self.hooks = hooks
        self._problems = list(problems)
        self.tools = self._collect_tools()
        self._started: list[TriggerPlugin] = []
        self._leases = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @classmethod
    def build(cls, catalog: PluginCatalog, profile: Profile, host: HostServices) -> PluginSet:
        """Build the profile's enabled plugins; one that fails is reported and left out."""
        members: list[_Member] = []
        problems: list[LoadProblem] = []
        for enabled in profile.plugins:
            loaded = catalog.plugins.get(enabled.id)
            if loaded is None:
                continue
            try:
                plugin = loaded.factory(_context(enabled, profile, host))
            except ConfigFileError as err:
                problems.append(LoadProblem.from_error("plugin", err))
                continue
            except Exception as err:
                problems.append(_failure(loaded, "could not be created", err))
                continue
            members.append(_Member(plugin=plugin, loaded=loaded))
        hooks = HookManager(
            [m.plugin for m in members if m.plays("hook") and isinstance(m.plugin, HookPlugin)],
            timeout=profile.hook_timeout,
        )
        return cls(members, hooks, problems)

    @property
    def problems(self) -> tuple[LoadProblem, ...]:
        """Return the plugins that could not be built or whose tools clash."""
        return tuple(self._problems)

    @property
    def plugin_ids(self) -> tuple[str, ...]:
        """Return the ids of the plugins that were built."""
        return tuple(member.plugin.plugin_id for member in self._members)

    def get(self, plugin_id: str) -> Plugin | None:
        """Return the built plugin with ``plugin_id``, or None."""
        return next((m.plugin for m in self._members if m.plugin.plugin_id == plugin_id), None)

    @property
    def transforms(self) -> bool:
        """Say whether any transformer takes part in the output (``transform`` changes it)."""
        return any(
            member.plays("transformer") and isinstance(member.plugin, TransformerPlugin)
            for member in self._members
        )

    def transform(self, items: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Chain every transformer, in profile order; a failing one is bypassed."""
        for member in self._members:
            if member.plays("transformer") and isinstance(member.plugin, TransformerPlugin):
                items = _guarded(member.plugin, items)
        return items

    async def start_triggers(self, emit: ProactiveEmitter) -> None:
        """Start every trigger plugin; one that fails to start is logged and skipped."""
        for member in self._members:
            plugin = member.plugin
            if not member.plays("trigger") or not isinstance(plugin, TriggerPlugin):
                continue
            try:
                async with asyncio.timeout(LIFECYCLE_TIMEOUT):
                    await plugin.start(emit)
            except Exception:
                LOGGER.warning("Trigger %s failed to start", plugin.plugin_id, exc_info=True)
                continue
            self._started.append(plugin)

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[None]:
        """Hold the plugins open for one turn; ``close`` waits for every lease to end."""
        self._leases += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._leases -= 1
            if self._leases == 0:
                self._idle.set()

    async def close(self, grace: float = 0.0) -> None:
        """Stop triggers, let turns and hooks finish within ``grace`` seconds, close all."""
        deadline = asyncio.get_running_loop().time() + grace
        started, self._started = self._started, []
        for trigger in started:
            await _quietly(trigger.stop(), trigger.plugin_id, "stop")
        try:
            async with asyncio.timeout_at(deadline):
                await self._idle.wait()
        except TimeoutError:
            LOGGER.warning("Closing plugins while %d turn(s) still use them", self._leases)
        await self.hooks.close(max(0.0, deadline - asyncio.get_running_loop().time()))
        for member in self._members:
            await _quietly(member.plugin.close(), member.plugin.plugin_id, "close")

    def _collect_tools(self) -> tuple[Tool, ...]:
        """Gather tools from tool plugins; a clashing name keeps the first and is reported."""
        tools: dict[str, Tool] = {}
        for member in self._members:
            plugin = member.plugin
            if not member.plays("tool") or not isinstance(plugin, ToolPlugin):
                continue
            try:
                offered = tuple(plugin.tools())
            except Exception as err:
                self._problems.append(_failure(member.loaded, "tools() failed", err))
                continue
            for tool in offered:
                if tool.spec.name in tools:
                    self._problems.append(
                        LoadProblem(
                            kind="plugin",
                            path=member.loaded.manifest.path,
                            key="plugin.id",
                            message=f"tool {tool.spec.name!r} is already provided; skipped",
                        )
                    )
                    continue
                tools[tool.spec.name] = tool
        return tuple(tools.values())


def _context(enabled: EnabledPlugin, profile: Profile, host: HostServices) -> PluginContext:
    """Make one plugin's context from the host's services and the profile."""
    return PluginContext(
        plugin_id=enabled.id,
        profile_id=profile.id,
        config=enabled.config,
        data_dir=host.data_root / enabled.id,
        time_zone=host.time_zone,
        http=host.http,
        language=profile.language,
        clock=host.clock,
        presence=host.presence,
        states=host.states,
        speakers=host.speakers,
    )


def _failure(loaded: LoadedPlugin, what: str, err: Exception) -> LoadProblem:
    """Report a plugin whose code raised."""
    return LoadProblem(
        kind="plugin",
        path=loaded.manifest.path,
        key="plugin.entry",
        message=f"{loaded.manifest.entry} {what}: {type(err).__name__}: {err}",
    )


async def _quietly(call: Awaitable[None], plugin_id: str, name: str) -> None:
    """Await a lifecycle call under a timeout; log and swallow its failure."""
    try:
        async with asyncio.timeout(LIFECYCLE_TIMEOUT):
            await call
    except Exception:
        LOGGER.warning("Plugin %s.%s failed", plugin_id, name, exc_info=True)


class _Tap:
    """Iterate the upstream for a transformer and remember whether the upstream failed."""

    def __init__(self, upstream: AsyncIterator[OutputItem]) -> None:
        """Wrap ``upstream``."""
        self._upstream = upstream
        self.error: BaseException | None = None

    def __aiter__(self) -> _Tap:
        """Return self."""
        return self

    async def __anext__(self) -> OutputItem:
        """Return the next upstream item, recording an upstream failure."""
        try:
            return await anext(self._upstream)
        except StopAsyncIteration:
            raise
        except BaseException as err:
            self.error = err
            raise


async def _guarded(
    plugin: TransformerPlugin, upstream: AsyncIterator[OutputItem]
) -> AsyncIterator[OutputItem]:
    """Run one transformer; if it fails, pass the rest of the stream through untouched."""
    tap = _Tap(upstream)
    try:
        async for item in plugin.transform(tap):
            yield item
    except Exception:
        if tap.error is not None:
            raise
        LOGGER.warning("Transformer %s failed; bypassing it", plugin.plugin_id, exc_info=True)
        async for item in tap:
            yield item


# The library: plugins and profiles loaded together.
@dataclass(frozen=True, slots=True, kw_only=True)
class Library:
    """The plugin catalog and the profile snapshots loaded from the same roots."""

    catalog: PluginCatalog = field(default_factory=PluginCatalog)
    profiles: ProfileLibrary = field(default_factory=ProfileLibrary)

    @property
    def problems(self) -> tuple[LoadProblem, ...]:
        """Return every plugin and profile problem, for the host's repair issues."""
        return (*self.catalog.problems, *self.profiles.problems)

    def activate(self, profile: Profile, host: HostServices) -> PluginSet:
        """Build the plugins ``profile`` enables; check ``problems`` on the result too."""
        return PluginSet.build(self.catalog, profile, host)


def load_library(roots: Sequence[Path], previous: Library | None = None) -> Library:
    """Load plugins, then profiles, from ``roots``; blocking; ``previous`` keeps last good ones."""
    catalog = load_plugins(roots)
    base = ProfileLibrary(roots=tuple(roots))
    if previous is not None:
        base = ProfileLibrary(roots=tuple(roots), profiles=previous.profiles.profiles)
    return Library(catalog=catalog, profiles=base.reload(catalog))
