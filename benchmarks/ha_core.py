"""A Home Assistant core in the benchmark's own process, with the companion set up by its flow.

The benchmarks that measure Home Assistant's side (``soak``, ``voice``, ``satellite``) run
HA in their own event loop, as its tests do, with no frontend: registries, config entries,
HTTP on a free loopback port (Assist's conversation needs it), Assist, and the companion
configured through its real config flow. HA is started as the HACS zip test starts it.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er

from custom_components.companion_agent.const import CONF_BASE_URL, CONF_MODEL, DOMAIN
from tests.support import ha_boot_program


async def start_home_assistant(config_dir: str) -> HomeAssistant:
    """Start a Home Assistant core in this process, as ``tests/support/ha_boot_program.py`` does."""
    return await ha_boot_program.start_home_assistant(config_dir)


async def configure(hass: HomeAssistant, url: str, api_key: str, model: str) -> str:
    """Run the integration's config flow and return its conversation agent's entity id."""
    flow = await hass.config_entries.flow.async_init(DOMAIN, context={"source": "user"})
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_BASE_URL: url, "api_key": api_key, CONF_MODEL: model}
    )
    if result["type"] != "create_entry":
        raise SystemExit(f"benchmark: the config flow failed: {result.get('errors')}")
    await hass.async_block_till_done()
    entries = er.async_entries_for_config_entry(er.async_get(hass), result["result"].entry_id)
    return next(e.entity_id for e in entries if e.domain == "conversation")
