"""What the tests under tests/ha share: our entry, turns through Assist, and what they leave.

HA keeps a component's shared test set-up in ``conftest.py`` (fixtures) and ``common.py``
(helpers); this package is our ``common``. Here are the plain helpers most tests use:

- our config entry: one builder per sub-entry kind (``const.SUBENTRY_*``: a persona, a voice
  on a Wyoming server or embedded Piper, a speech-to-text model, a Wyoming satellite, an AI
  task), each with the defaults most tests want; ``companion_entry`` puts them in one entry;
  its entities once loaded; a step through a sub-entry flow's menu; a port nobody listens on;
- turns through HA's conversation API, as the Assist pipeline or a satellite's pipeline runs
  them, and their answers;
- the conversation history the integration writes (one SQLite file, ``exchanges.db``), read
  as an outsider would, with ``sqlite3``;
- the user's own plugin and profile files under HA's config folder, and the gates those
  test plugins wait on, so a test decides when a hook or tool goes on;
- memory: people, an entry's memory; the integration's services and HA's AI task service.

Helpers of one larger concept have a module each beside this one: ``audio`` (our TTS stream
and STT's audio), ``card`` (the card's WebSocket client), ``house`` (HA's demo lock, light and
cover, acted on through Assist), ``pipelines`` (Assist pipelines and text runs), ``releases``
(HA's LLM tools of later releases, emulated), ``satellites`` (HA's satellite and ours on a
pipeline), ``speakers`` (devices a companion speaks first on, and ``start_chat``). None is
named after a helper here: a submodule, once imported, would hide it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import Awaitable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent
from typing import Protocol, cast

from homeassistant.components import conversation
from homeassistant.components.assist_satellite.entity import AssistSatelliteState
from homeassistant.components.stt.const import DATA_COMPONENT as STT_COMPONENT
from homeassistant.components.tts.const import DATA_COMPONENT as TTS_COMPONENT
from homeassistant.config_entries import ConfigSubentryData, SubentryFlowResult
from homeassistant.const import CONF_API_KEY, CONF_HOST, CONF_LLM_HASS_API, CONF_PORT
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import chat_session
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from homeassistant.util.json import JsonObjectType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.config_flow import CompanionConfigFlow
from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_MEMORY_ENVIRONMENT,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_SPEAKER,
    CONF_VOICE,
    DOMAIN,
    ENGINE_EMBEDDED,
    STORAGE_FOLDER,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_SATELLITE,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.stt import CompanionSttEntity
from custom_components.companion_agent.tts import CompanionTtsEntity

MODEL = "test-model"
VOICE = "en_US-joe-medium"
"""The voice the Piper peer in .peers/piper speaks."""
CAMERA = "camera.demo_camera"
"""HA's demo camera, which the ``demo_camera`` fixture exposes to Assist."""

type Delta = dict[str, object]
type StoredTurn = dict[str, object]
type Row = dict[str, str | None]


class SetupCompanion(Protocol):
    """Set up our entry against the local model server; return it once loaded."""

    def __call__(
        self, *subentries: ConfigSubentryData, options: Mapping[str, object] | None = None
    ) -> Awaitable[MockConfigEntry]:
        """Set up an entry with ``subentries`` (one default persona if none) and ``options``."""


class SetupPersonas(Protocol):
    """Set up our entry with one persona per ``title: profile``; return it and the agents."""

    def __call__(
        self, personas: Mapping[str, str], *, options: Mapping[str, object] | None = None
    ) -> Awaitable[tuple[MockConfigEntry, dict[str, str]]]:
        """Return the loaded entry (with ``options``) and each persona's agent id by title."""


def persona(
    title: str = "Companion",
    profile: str = "default",
    *,
    llm_apis: Sequence[str] = (),
    roles: Mapping[str, Mapping[str, object]] | None = None,
) -> ConfigSubentryData:
    """Return a persona sub-entry: a conversation agent on ``profile``, using ``llm_apis``.

    ``roles`` are its form's model sections (``chat``, ``vision``, ``memory``, ``summary``).
    """
    data: dict[str, object] = {CONF_PROFILE: profile, **(roles or {})}
    if llm_apis:
        data[CONF_LLM_HASS_API] = list(llm_apis)
    return _subentry(SUBENTRY_CONVERSATION, title, data)


def ai_task(
    title: str = "Companion AI task", roles: Mapping[str, Mapping[str, object]] | None = None
) -> ConfigSubentryData:
    """Return an AI task sub-entry whose model sections are ``roles`` (``chat``, ``vision``)."""
    return _subentry(SUBENTRY_AI_TASK, title, dict(roles or {}))


def wyoming_voice(
    host: str,
    port: int,
    voice: str = VOICE,
    *,
    speaker: str | None = None,
    languages: Sequence[str] = ("en_US",),
) -> ConfigSubentryData:
    """Return a voice sub-entry spoken by the Wyoming TTS server at ``host``:``port``."""
    data: dict[str, object] = {
        CONF_HOST: host,
        CONF_PORT: port,
        CONF_VOICE: voice,
        CONF_LANGUAGES: list(languages),
    }
    if speaker is not None:
        data[CONF_SPEAKER] = speaker
    title = voice if speaker is None else f"{voice} ({speaker})"
    return _subentry(SUBENTRY_TTS, title, data)


def embedded_voice(voice: str, *, languages: Sequence[str] = ("en_US",)) -> ConfigSubentryData:
    """Return a voice sub-entry spoken by embedded Piper from the voices folder."""
    data = {CONF_ENGINE: ENGINE_EMBEDDED, CONF_VOICE: voice, CONF_LANGUAGES: list(languages)}
    return _subentry(SUBENTRY_TTS, f"{voice} (embedded)", data)


def speech_to_text(
    host: str,
    port: int,
    model: str = "tiny",
    *,
    languages: Sequence[str] = ("en", "zh"),
    title: str | None = None,
) -> ConfigSubentryData:
    """Return a speech-to-text sub-entry: ``model`` on the Wyoming ASR server there."""
    data = {CONF_HOST: host, CONF_PORT: port, CONF_MODEL: model, CONF_LANGUAGES: list(languages)}
    return _subentry(SUBENTRY_STT, title or model, data)


def satellite(host: str, port: int, title: str = "Kitchen satellite") -> ConfigSubentryData:
    """Return a satellite sub-entry: the Wyoming satellite at ``host``:``port``."""
    return _subentry(SUBENTRY_SATELLITE, title, {CONF_HOST: host, CONF_PORT: port})


def companion_entry(
    base_url: str,
    *subentries: ConfigSubentryData,
    api_key: str = "",
    options: Mapping[str, object] | None = None,
    minor_version: int = CompanionConfigFlow.MINOR_VERSION,
) -> MockConfigEntry:
    """Return our entry for the model server at ``base_url`` with these sub-entries.

    Its memories are the test environment's, never production's; it is of the current
    version unless ``minor_version`` says it was made by an older one.
    """
    return MockConfigEntry(
        domain=DOMAIN,
        title=MODEL,
        data={
            CONF_BASE_URL: base_url,
            CONF_API_KEY: api_key,
            CONF_MODEL: MODEL,
            CONF_MEMORY_ENVIRONMENT: "test",
        },
        options=dict(options or {}),
        subentries_data=list(subentries),
        minor_version=minor_version,
    )


async def async_load(
    hass: HomeAssistant, entry: MockConfigEntry, *, wait_background_tasks: bool = False
) -> MockConfigEntry:
    """Add ``entry`` to HA, set it up (it must load) and let its platforms settle."""
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=wait_background_tasks)
    return entry


def entity_ids(hass: HomeAssistant, entry: MockConfigEntry, domain: str) -> list[str]:
    """Return the entry's entities of ``domain`` (``conversation``, ``tts``, ...)."""
    return [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == domain
    ]


def entity_id(hass: HomeAssistant, entry: MockConfigEntry, domain: str) -> str:
    """Return the entry's one entity of ``domain``."""
    (only,) = entity_ids(hass, entry, domain)
    return only


def tts_entity(hass: HomeAssistant, entry: MockConfigEntry) -> CompanionTtsEntity:
    """Return the entry's one TTS entity object."""
    entity = hass.data[TTS_COMPONENT].get_entity(entity_id(hass, entry, "tts"))
    assert isinstance(entity, CompanionTtsEntity)
    return entity


def stt_entity(hass: HomeAssistant, entry: MockConfigEntry) -> CompanionSttEntity:
    """Return the entry's one STT entity object."""
    entity = hass.data[STT_COMPONENT].get_entity(entity_id(hass, entry, "stt"))
    assert isinstance(entity, CompanionSttEntity)
    return entity


def agent_entity_id(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Return the conversation entity of the entry's only persona (beside its sensors and list)."""
    entities = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    assert sorted(e.domain for e in entities) == [
        "conversation",
        "sensor",
        "sensor",
        "sensor",
        "todo",
    ]
    return next(e.entity_id for e in entities if e.domain == "conversation")


def task_entity(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Return the entry's AI task entity."""
    (found,) = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "ai_task"
    ]
    return found


def add_satellite(hass: HomeAssistant) -> tuple[str, str]:
    """Register a satellite entity on a device of its own; return its device and entity ids."""
    owner = MockConfigEntry(domain="test_satellite")
    owner.add_to_hass(hass)
    device = dr.async_get(hass).async_get_or_create(
        config_entry_id=owner.entry_id, identifiers={("test_satellite", "kitchen")}
    )
    entity = er.async_get(hass).async_get_or_create(
        "assist_satellite", "test_satellite", "kitchen", device_id=device.id
    )
    hass.states.async_set(entity.entity_id, AssistSatelliteState.IDLE)
    return device.id, entity.entity_id


def agents_by_title(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, str]:
    """Return the conversation entity id of each persona, by the sub-entry's title."""
    titles = {sub.subentry_id: sub.title for sub in entry.subentries.values()}
    return {
        titles[e.config_subentry_id]: e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "conversation" and e.config_subentry_id is not None
    }


async def choose(hass: HomeAssistant, menu: SubentryFlowResult, option: str) -> SubentryFlowResult:
    """Pick ``option`` in a subentry flow's menu and return the next step."""
    assert menu["type"] is FlowResultType.MENU
    return await hass.config_entries.subentries.async_configure(
        menu["flow_id"], {"next_step_id": option}
    )


def closed_port() -> int:
    """Return a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _subentry(kind: str, title: str, data: Mapping[str, object]) -> ConfigSubentryData:
    """Return one sub-entry's stored form."""
    return ConfigSubentryData(data=dict(data), subentry_type=kind, title=title, unique_id=None)


async def ask(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None = None,
    *,
    user_id: str | None = None,
    language: str = "en",
) -> conversation.ConversationResult:
    """Run one turn as ``user_id`` (None: a satellite with nobody signed in)."""
    return await conversation.async_converse(
        hass, text, conversation_id, Context(user_id=user_id), language=language, agent_id=agent_id
    )


async def converse(
    hass: HomeAssistant, agent_id: str, text: str, deltas: list[Delta]
) -> tuple[conversation.ConversationResult, list[conversation.Content]]:
    """Run one turn as the Assist pipeline does, with a delta listener attached."""
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(
            hass, session, chat_log_delta_listener=lambda _log, delta: deltas.append(delta)
        ) as chat_log,
    ):
        result = await conversation.async_converse(
            hass, text, session.conversation_id, Context(), language="en", agent_id=agent_id
        )
        return result, list(chat_log.content)


def start_satellite_turn(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    *,
    device_id: str | None = None,
    satellite_id: str | None = None,
) -> asyncio.Task[conversation.ConversationResult]:
    """Start one turn the way a satellite's pipeline does."""
    return hass.async_create_task(
        conversation.async_converse(
            hass,
            text,
            None,
            Context(),
            language="en",
            agent_id=agent_id,
            device_id=device_id,
            satellite_id=satellite_id,
        )
    )


def speech(result: conversation.ConversationResult) -> str:
    """Return what the answer says."""
    return str(result.response.speech["plain"]["speech"])


def _rows(hass: HomeAssistant, columns: str) -> list[tuple[object, ...]]:
    """Return the exchange store's rows (none when there is no file yet)."""
    path = Path(hass.config.path(DOMAIN)) / "exchanges.db"
    if not path.exists():
        return []
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT {columns} FROM exchanges ORDER BY time, rowid").fetchall()


def stored_turns(hass: HomeAssistant) -> list[StoredTurn]:
    """Return every stored turn of every persona, read from disk, oldest first."""
    return [json.loads(str(raw)) for (raw,) in _rows(hass, "turn")]


def stored_conversations(hass: HomeAssistant) -> set[tuple[str, str]]:
    """Return the ``(persona, conversation key)`` of every conversation on disk."""
    return {(str(persona), str(key)) for persona, key in _rows(hass, "persona, conversation")}


def assistant_text(turn: StoredTurn) -> str:
    """Return what a stored turn's assistant messages say."""
    messages = turn["messages"]
    assert isinstance(messages, list)
    return "".join(str(m["content"]) for m in messages if m["role"] == "assistant")


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


@dataclass(slots=True)
class Gate:
    """Events one plugin sets or waits for, and the order in which things happened."""

    reached: asyncio.Event = field(default_factory=asyncio.Event)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    passed: asyncio.Event = field(default_factory=asyncio.Event)
    cut: asyncio.Event = field(default_factory=asyncio.Event)
    log: list[str] = field(default_factory=list)

    async def pass_through(self, what: str) -> None:
        """Say the gate was reached, wait until it opens, and note a cut or a pass."""
        self.log.append(f"{what} reached")
        self.reached.set()
        try:
            await self.opened.wait()
        except asyncio.CancelledError:
            self.log.append(f"{what} cut")
            self.cut.set()
            raise
        self.log.append(f"{what} passed")
        self.passed.set()


GATES: dict[str, Gate] = {}
"""Each test plugin's gate, by plugin id.

A user plugin written by a test imports ``GATES`` and calls ``Gate.pass_through`` in the hook
or tool the test wants to hold; the test awaits ``reached``, acts, then sets ``opened``.
"""


async def add_person(hass: HomeAssistant, name: str) -> tuple[str, str]:
    """Create an HA user and a person entity for it; return (user id, person entity id)."""
    user = await hass.auth.async_create_user(name)
    slug = name.lower()
    hass.states.async_set(f"person.{slug}", "home", {"user_id": user.id, "friendly_name": name})
    return user.id, f"person.{slug}"


def memory_of(entry: MockConfigEntry) -> CompanionMemory:
    """Return the entry's memory (it must be on)."""
    memory = cast(CompanionMemory | None, entry.runtime_data.engine.memory)
    assert memory is not None
    return memory


async def settled(entry: MockConfigEntry) -> None:
    """Wait until the entry's memory wrote everything it queued."""
    assert await memory_of(entry).wait_idle(5)


async def call(
    hass: HomeAssistant, service: str, data: dict[str, object], *, response: bool = True
) -> JsonObjectType:
    """Call one of the integration's services and return its response."""
    result = await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=response
    )
    return dict(result or {})


def rows(response: JsonObjectType, key: str = "memories") -> list[Row]:
    """Return the memory records a service answered."""
    return cast(list[Row], response[key])


def row(response: JsonObjectType, key: str) -> Row:
    """Return the one memory record a service answered under ``key``."""
    return cast(Row, response[key])


async def generate(hass: HomeAssistant, entity_id: str, **data: object) -> object:
    """Call ``ai_task.generate_data`` as an automation would; return its data."""
    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {"task_name": "Front door", "entity_id": entity_id, **data},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    return response["data"]
