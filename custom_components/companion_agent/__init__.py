"""The Companion Agent integration: a voice companion for Home Assistant."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_API_KEY, Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.util import dt as dt_util

from .const import CONF_BASE_URL, CONF_MODEL, LOGGER, STORAGE_FOLDER
from .engine.errors import LLMAuthError, LLMError
from .engine.llm import LLMSettings, OpenAIChatModel
from .engine.storage import ConversationShelf
from .engine.tools.clock import clock_tool
from .engine.tools.registry import ToolRegistry

PLATFORMS = (Platform.CONVERSATION,)


@dataclass(slots=True, kw_only=True)
class CompanionRuntime:
    """What a loaded entry shares with its platforms."""

    model: OpenAIChatModel
    tools: ToolRegistry
    data_dir: Path
    shelves: dict[str, ConversationShelf] = field(default_factory=dict)

    def shelf(self, persona_id: str) -> ConversationShelf:
        """Return the conversation storage of one persona."""
        if persona_id not in self.shelves:
            folder = self.data_dir / "conversations" / persona_id
            self.shelves[persona_id] = ConversationShelf(folder)
        return self.shelves[persona_id]


type CompanionConfigEntry = ConfigEntry[CompanionRuntime]


def build_model(hass: HomeAssistant, data: dict[str, str]) -> OpenAIChatModel:
    """Create the model adapter for an entry's connection settings."""
    settings = LLMSettings(
        base_url=data[CONF_BASE_URL],
        model=data[CONF_MODEL],
        api_key=data.get(CONF_API_KEY) or None,
    )
    return OpenAIChatModel(settings, http_client=get_async_client(hass))


async def async_setup_entry(hass: HomeAssistant, entry: CompanionConfigEntry) -> bool:
    """Connect to the model server and set up the conversation agents."""
    model = build_model(hass, dict(entry.data))
    try:
        await model.list_models()
    except LLMAuthError as err:
        raise ConfigEntryAuthFailed(str(err)) from err
    except LLMError as err:
        raise ConfigEntryNotReady(str(err)) from err
    entry.runtime_data = CompanionRuntime(
        model=model,
        tools=ToolRegistry([clock_tool(dt_util.get_default_time_zone())]),
        data_dir=Path(hass.config.path(STORAGE_FOLDER)),
    )
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(entry.add_update_listener(_async_update_listener))
    LOGGER.debug("Companion Agent set up for %s", entry.data[CONF_BASE_URL])
    return True


async def async_unload_entry(hass: HomeAssistant, entry: CompanionConfigEntry) -> bool:
    """Unload the conversation agents."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def _async_update_listener(hass: HomeAssistant, entry: CompanionConfigEntry) -> None:
    """Reload the entry when its subentries or options change."""
    await hass.config_entries.async_reload(entry.entry_id)
