"""Boot Home Assistant from a config folder, set up companion_agent from it, run one turn.

``test_hacs_zip`` copies this file out of the repo and runs it in a subprocess whose
``sys.path`` does not hold the repo, so HA can only find the integration where HACS puts it:
``<config>/custom_components/companion_agent``. It prints one JSON line with what HA loaded.
It must not import ``tests`` or the integration before HA has mounted the config folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys

from homeassistant import bootstrap, config_entries, loader
from homeassistant.auth import auth_manager_from_config
from homeassistant.components import conversation
from homeassistant.components.conversation.agent_manager import async_get_agent
from homeassistant.const import CONF_NAME
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component

DOMAIN = "companion_agent"
QUESTION = "现在几点？"


def free_port() -> int:
    """Return a loopback port nobody listens on, for HA's HTTP server."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def start_home_assistant(config_dir: str) -> HomeAssistant:
    """Start a Home Assistant core with registries, config entries, HTTP on loopback, Assist.

    The benchmarks start theirs here too (``benchmarks/ha_core.py``).
    """
    hass = HomeAssistant(config_dir)
    hass.config.skip_pip = True
    hass.config_entries = config_entries.ConfigEntries(hass, {})
    loader.async_setup(hass)
    await loader.async_get_custom_components(hass)
    await bootstrap.async_load_base_functionality(hass)
    hass.auth = await auth_manager_from_config(hass, [], [])
    await hass.async_start()
    http = {"http": {"server_host": ["127.0.0.1"], "server_port": free_port()}}
    for domain, config in (("homeassistant", {}), ("http", http), ("conversation", {})):
        if not await async_setup_component(hass, domain, config):
            raise SystemExit(f"ha_boot_program: HA could not set up {domain}")
    return hass


async def add_baoqiao(hass: HomeAssistant, url: str) -> tuple[str, str]:
    """Configure the entry and a 宝巧 persona through the real flows; return entry and agent."""
    from custom_components.companion_agent.const import (
        CONF_BASE_URL,
        CONF_MODEL,
        CONF_PROFILE,
        SUBENTRY_CONVERSATION,
    )

    flow = await hass.config_entries.flow.async_init(DOMAIN, context={"source": "user"})
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_BASE_URL: url, "api_key": "", CONF_MODEL: "test-model"}
    )
    if result["type"] != "create_entry":
        raise SystemExit(f"ha_boot_program: config flow failed: {result}")
    entry_id = result["result"].entry_id
    await hass.async_block_till_done()
    sub = await hass.config_entries.subentries.async_init(
        (entry_id, SUBENTRY_CONVERSATION), context={"source": "user"}
    )
    done = await hass.config_entries.subentries.async_configure(
        sub["flow_id"], {CONF_NAME: "宝巧", CONF_PROFILE: "baoqiao"}
    )
    if done["type"] != "create_entry":
        raise SystemExit(f"ha_boot_program: persona flow failed: {done}")
    await hass.async_block_till_done()
    entry = hass.config_entries.async_get_entry(entry_id)
    assert entry is not None
    subentry_id = next(s.subentry_id for s in entry.subentries.values() if s.title == "宝巧")
    agent = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry_id)
        if e.domain == "conversation" and e.config_subentry_id == subentry_id
    )
    return entry_id, agent


async def report(hass: HomeAssistant, entry_id: str, agent_id: str) -> dict[str, object]:
    """Run one turn and describe what HA loaded, and from where."""
    from custom_components.companion_agent.conversation import CompanionConversationEntity
    from custom_components.companion_agent.diagnostics import (
        async_get_config_entry_diagnostics,
    )

    integration = await loader.async_get_integration(hass, DOMAIN)
    entry = hass.config_entries.async_get_entry(entry_id)
    assert entry is not None
    entity = async_get_agent(hass, agent_id)
    assert isinstance(entity, CompanionConversationEntity)
    result = await conversation.async_converse(
        hass, QUESTION, None, Context(), language="zh-CN", agent_id=agent_id
    )
    library = entry.runtime_data.engine.library
    modules = {
        name: str(getattr(module, "__file__", None))
        for name, module in sys.modules.items()
        if name.startswith(("custom_components", "companion_agent_plugins"))
        and getattr(module, "__file__", None)
    }
    return {
        "integration": str(integration.file_path),
        "built_in": integration.is_built_in,
        "state": entry.state.value,
        "modules": modules,
        "profiles": {p.id: str(p.source) for p in library.profiles},
        "plugins": {pid: str(p.manifest.folder) for pid, p in library.catalog.plugins.items()},
        "persona": {
            "profile": str(entity.persona.profile.source),
            "plugins": list(entity.persona.plugins.plugin_ids),
        },
        "diagnostics": await async_get_config_entry_diagnostics(hass, entry),
        "answer": result.response.speech["plain"]["speech"],
    }


async def main() -> None:
    """Boot HA, configure the integration against the given server, print the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("config_dir")
    parser.add_argument("llm_url")
    args = parser.parse_args()
    hass = await start_home_assistant(args.config_dir)
    try:
        entry_id, agent_id = await add_baoqiao(hass, args.llm_url)
        print(json.dumps(await report(hass, entry_id, agent_id), ensure_ascii=False))
    finally:
        await hass.async_stop()


if __name__ == "__main__":
    asyncio.run(main())
