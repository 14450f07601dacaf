"""Helpers for persona tests: user plugin and profile files, entries, turns, wire requests."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    STORAGE_FOLDER,
)
from tests.ha.conftest import make_personas_entry
from tests.support.llm_server import LLMServer

type Body = dict[str, object]
type Message = dict[str, object]


def user_folder(hass: HomeAssistant) -> Path:
    """Return the user's plugin and profile folder under HA's config folder."""
    return Path(hass.config.path(STORAGE_FOLDER))


def write_plugin(hass: HomeAssistant, plugin_id: str, manifest: str, code: str) -> Path:
    """Write ``<config>/companion_agent/plugins/<id>/`` and return its plugin.toml."""
    folder = user_folder(hass) / "plugins" / plugin_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.py").write_text(dedent(code), encoding="utf-8")
    path = folder / "plugin.toml"
    path.write_text(dedent(manifest), encoding="utf-8")
    return path


def write_profile(hass: HomeAssistant, profile_id: str, text: str) -> Path:
    """Write ``<config>/companion_agent/profiles/<id>.toml`` and return it."""
    folder = user_folder(hass) / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{profile_id}.toml"
    path.write_text(dedent(text), encoding="utf-8")
    return path


async def setup_personas(
    hass: HomeAssistant, server: LLMServer, personas: dict[str, str]
) -> tuple[MockConfigEntry, dict[str, str]]:
    """Set up an entry with the personas; return it and each persona's agent entity id."""
    entry = make_personas_entry(server, personas)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry, agents_by_title(hass, entry)


def agents_by_title(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, str]:
    """Return the conversation entity id of each persona, by the subentry's title."""
    titles = {sub.subentry_id: sub.title for sub in entry.subentries.values()}
    return {
        titles[e.config_subentry_id]: e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "conversation" and e.config_subentry_id is not None
    }


async def ask(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None = None,
    language: str = "en",
) -> conversation.ConversationResult:
    """Run one turn the way the Assist pipeline does."""
    return await conversation.async_converse(
        hass, text, conversation_id, Context(), language=language, agent_id=agent_id
    )


def speech(result: conversation.ConversationResult) -> str:
    """Return what the answer says."""
    return str(result.response.speech["plain"]["speech"])


def messages(body: Body) -> list[Message]:
    """Return the chat messages of one request to the model server."""
    raw = body["messages"]
    assert isinstance(raw, list)
    return [message for message in raw if isinstance(message, dict)]


def system_text(body: Body) -> str:
    """Return the system prompt of a request; it must come first."""
    first = messages(body)[0]
    assert first["role"] == "system"
    return str(first["content"])


def user_text(body: Body) -> str:
    """Return the last user message of a request: the one this turn added."""
    users = [m for m in messages(body) if m["role"] == "user"]
    return str(users[-1]["content"])


def tool_names(body: Body) -> set[str]:
    """Return the names of the tools a request offers the model."""
    tools = body.get("tools")
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            names.add(str(function["name"]))
    return names
