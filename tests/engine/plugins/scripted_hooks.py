"""Hook plugins built directly (no plugin.toml) for HookManager tests."""

from __future__ import annotations

import asyncio
from pathlib import Path

from custom_components.companion_agent.engine.plugins import (
    HookPlugin,
    HostServices,
    PluginConfig,
    PluginContext,
    TurnContext,
)

CTX = TurnContext(conversation_id="conv-1", profile_id="test", first_turn=True)


def context(plugin_id: str, host: HostServices) -> PluginContext:
    """Return a context for a plugin built by hand."""
    config = PluginConfig(plugin_id=plugin_id, defaults_path=Path(f"{plugin_id}/plugin.toml"))
    return PluginContext(
        plugin_id=plugin_id,
        profile_id="test",
        config=config,
        data_dir=host.data_root / plugin_id,
        time_zone=host.time_zone,
        http=host.http,
        clock=host.clock,
    )


class Scripted(HookPlugin):
    """A hook whose answers, delays and failures a test sets, logging what it does."""

    def __init__(
        self,
        plugin_id: str,
        host: HostServices,
        log: list[str],
        *,
        text: str | None = None,
        first: str | None = None,
        gate: asyncio.Event | None = None,
        after_gate: asyncio.Event | None = None,
        fail: bool = False,
    ) -> None:
        """Build with the text it returns and the event it waits for, if any."""
        super().__init__(context(plugin_id, host))
        self.log = log
        self.text = text
        self.first = first
        self.gate = gate
        self.after_gate = after_gate
        self.fail = fail

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Return the pre-read text, after the gate opens."""
        if self.gate is not None:
            await self.gate.wait()
        return self.first

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Return the text, after the gate opens; log a cut."""
        self.log.append(f"{self.plugin_id} before")
        if self.fail:
            raise RuntimeError("hook bug")
        if self.gate is not None and self.first is None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.log.append(f"{self.plugin_id} cut")
                raise
        return self.text

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Log start and end; wait for the after-gate in between."""
        self.log.append(f"{self.plugin_id} after start")
        if self.fail:
            raise RuntimeError("hook bug")
        if self.after_gate is not None:
            await self.after_gate.wait()
        self.log.append(f"{self.plugin_id} after end: {assistant_text}")

    async def on_after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext
    ) -> None:
        """Log that playback finished."""
        self.log.append(f"{self.plugin_id} played: {assistant_text}")
