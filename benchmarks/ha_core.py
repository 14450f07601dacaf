"""A Home Assistant core in the benchmark's own process, with the companion set up by its flow.

The benchmarks that measure Home Assistant's side (``soak``, ``voice``) run HA in their own
event loop, as its tests do, with no HTTP server and no frontend: registries, config
entries, Assist, and the companion configured through its real config flow.
"""

from __future__ import annotations

from homeassistant import bootstrap, config_entries, loader
from homeassistant.auth import auth_manager_from_config
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component

from custom_components.companion_agent.const import CONF_BASE_URL, CONF_MODEL, DOMAIN


async def start_home_assistant(config_dir: str) -> HomeAssistant:
    """Start a Home Assistant core in this process with its registries and Assist."""
    hass = HomeAssistant(config_dir)
    hass.config_entries = config_entries.ConfigEntries(hass, {})
    loader.async_setup(hass)
    await loader.async_get_custom_components(hass)
    await bootstrap.async_load_base_functionality(hass)
    hass.auth = await auth_manager_from_config(hass, [], [])
    await hass.async_start()
    for domain in ("homeassistant", "conversation"):
        if not await async_setup_component(hass, domain, {}):
            raise SystemExit(f"benchmark: HA could not set up {domain}")
    return hass


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
