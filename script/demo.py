"""Boot a real Home Assistant core headless, configure the integration, stream one turn."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from homeassistant import bootstrap, config_entries, loader  # noqa: E402
from homeassistant.auth import auth_manager_from_config  # noqa: E402
from homeassistant.components import conversation  # noqa: E402
from homeassistant.core import Context, HomeAssistant  # noqa: E402
from homeassistant.helpers import chat_session  # noqa: E402
from homeassistant.helpers import entity_registry as er  # noqa: E402
from homeassistant.setup import async_setup_component  # noqa: E402

from custom_components.companion_agent.const import CONF_BASE_URL, CONF_MODEL, DOMAIN  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402


def show(_log: conversation.ChatLog, delta: dict[str, object]) -> None:
    """Print each ChatLog delta the moment HA receives it."""
    if text := delta.get("content"):
        print(text, end="", flush=True)
    elif thinking := delta.get("thinking_content"):
        print(f"\033[2m{thinking}\033[0m", end="", flush=True)
    elif calls := delta.get("tool_calls"):
        for call in calls if isinstance(calls, list) else []:
            print(f"\n  [tool call] {call.tool_name}({call.tool_args})", flush=True)
    elif delta.get("role") == "tool_result":
        print(f"  [tool result] {delta.get('tool_name')}: {delta.get('tool_result')}", flush=True)


async def start_home_assistant(config_dir: str) -> HomeAssistant:
    """Start a Home Assistant core with its registries, config entries and Assist."""
    hass = HomeAssistant(config_dir)
    hass.config_entries = config_entries.ConfigEntries(hass, {})
    loader.async_setup(hass)
    await loader.async_get_custom_components(hass)
    await bootstrap.async_load_base_functionality(hass)
    hass.auth = await auth_manager_from_config(hass, [], [])
    await hass.async_start()
    for domain in ("homeassistant", "conversation"):
        if not await async_setup_component(hass, domain, {}):
            raise SystemExit(f"demo: HA could not set up {domain}")
    return hass


async def configure(hass: HomeAssistant, url: str, api_key: str, model: str) -> str:
    """Run the integration's real config flow and return the agent's entity id."""
    flow = await hass.config_entries.flow.async_init(DOMAIN, context={"source": "user"})
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_BASE_URL: url, "api_key": api_key, CONF_MODEL: model}
    )
    if result["type"] != "create_entry":
        raise SystemExit(f"demo: config flow failed: {result.get('errors')}")
    await hass.async_block_till_done()
    entity_ids = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), result["result"].entry_id)
        if e.domain == "conversation"
    ]
    return entity_ids[0]


async def run_turn(hass: HomeAssistant, agent_id: str, text: str, language: str) -> None:
    """Send one utterance the way the Assist pipeline does, printing deltas as they stream."""
    print(f"you> {text}\ncompanion> ", end="", flush=True)
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(hass, session, chat_log_delta_listener=show),
    ):
        result = await conversation.async_converse(
            hass, text, session.conversation_id, Context(), language=language, agent_id=agent_id
        )
    print(f"\n\nspeech: {result.response.speech['plain']['speech']}")


async def main() -> None:
    """Start the model server (unless one is given), HA, and run the turn."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("text", nargs="?", default="What time is it?")
    parser.add_argument("--language", default="en")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    server: LLMServer | None = None
    url = os.environ.get("COMPANION_LLM_URL", "")
    if not url:
        server = LLMServer()
        await server.start()
        url = server.url
        print(f"(local scripted model server on {url})")
    api_key = os.environ.get("COMPANION_LLM_API_KEY", "")
    model = os.environ.get("COMPANION_LLM_MODEL", "test-model")
    with tempfile.TemporaryDirectory(prefix="companion-demo-") as config_dir:
        hass = await start_home_assistant(config_dir)
        try:
            agent_id = await configure(hass, url, api_key, model)
            await run_turn(hass, agent_id, args.text, args.language)
        finally:
            await hass.async_stop()
            if server is not None:
                await server.close()


if __name__ == "__main__":
    asyncio.run(main())
