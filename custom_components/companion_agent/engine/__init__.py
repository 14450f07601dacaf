"""The companion engine: pure asyncio, never imports homeassistant."""
