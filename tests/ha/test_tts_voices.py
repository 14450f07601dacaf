"""Reconfiguring a voice and choosing a voice per request, with the real wyoming-piper."""

from pathlib import Path

import pytest
from homeassistant import config_entries
from homeassistant.components import tts
from homeassistant.components.tts.const import DATA_COMPONENT
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import issue_registry as ir

from custom_components.companion_agent.const import (
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_VOICE,
    DOMAIN,
    ENGINE_EMBEDDED,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.repairs import async_report_missing_voice
from custom_components.companion_agent.tts import SAMPLE_OPTIONS, CompanionTtsEntity
from tests.ha.common import VOICE, SetupCompanion, choose, closed_port
from tests.ha.common.audio import ADVERTISED_NOT_INSTALLED, setup_voice, stream, wav_format
from tests.support.piper import PiperPeer
from tests.support.piper_voice import install_voice
from tests.support.wyoming_proxy import WyomingProxy


async def reconfigure(
    hass: HomeAssistant, entity: CompanionTtsEntity, option: str
) -> dict[str, object]:
    """Start reconfiguring the entity's voice and pick ``option`` in the menu."""
    result = await hass.config_entries.subentries.async_init(
        (entity.entry.entry_id, SUBENTRY_TTS),
        context={
            "source": config_entries.SOURCE_RECONFIGURE,
            "subentry_id": entity.subentry.subentry_id,
        },
    )
    assert result["type"] is FlowResultType.MENU
    assert result["step_id"] == "reconfigure"
    return dict(await choose(hass, result, option))


async def submit(
    hass: HomeAssistant, result: dict[str, object], data: dict[str, object]
) -> dict[str, object]:
    """Submit ``data`` to the flow's current step."""
    return dict(await hass.config_entries.subentries.async_configure(str(result["flow_id"]), data))


def entity_of(hass: HomeAssistant, entity: CompanionTtsEntity) -> CompanionTtsEntity:
    """Return the entity that now stands for ``entity`` (the entry reloads on a change)."""
    current = hass.data[DATA_COMPONENT].get_entity(entity.entity_id)
    assert isinstance(current, CompanionTtsEntity)
    return current


async def test_reconfiguring_moves_the_voice_to_another_server_checked_live(
    hass: HomeAssistant, setup_companion: SetupCompanion, proxy: WyomingProxy
) -> None:
    entity = await setup_voice(hass, setup_companion, "127.0.0.1", closed_port())
    result = await reconfigure(hass, entity, "server")
    assert result["step_id"] == "server"
    schema = result["data_schema"]
    suggested = {str(key): key.description["suggested_value"] for key in schema.schema}  # type: ignore[attr-defined]
    assert suggested == {CONF_HOST: "127.0.0.1", CONF_PORT: entity.subentry.data[CONF_PORT]}

    result = await submit(hass, result, {CONF_HOST: "127.0.0.1", CONF_PORT: closed_port()})
    assert result["errors"] == {"base": "cannot_connect"}
    result = await submit(hass, result, {CONF_HOST: proxy.host, CONF_PORT: proxy.port})
    assert result["step_id"] == "voice"
    (key,) = result["data_schema"].schema  # type: ignore[attr-defined]
    assert key.default() == VOICE  # the current voice is preselected
    result = await submit(hass, result, {CONF_VOICE: VOICE})

    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    subentry = entity.entry.subentries[entity.subentry.subentry_id]
    assert subentry.data == {
        CONF_HOST: proxy.host,
        CONF_PORT: proxy.port,
        CONF_VOICE: VOICE,
        CONF_LANGUAGES: ["en_US"],
    }
    await hass.async_block_till_done()
    assert await stream(entity_of(hass, entity), "Hello there.")
    assert proxy.texts == ["Hello there."]


async def test_reconfiguring_a_server_voice_to_embedded_piper(
    hass: HomeAssistant, setup_companion: SetupCompanion, piper: PiperPeer
) -> None:
    entity = await setup_voice(hass, setup_companion, piper.host, piper.port)
    await hass.async_add_executor_job(
        install_voice, Path(hass.config.path("companion_agent", "voices"))
    )
    result = await reconfigure(hass, entity, "embedded")
    assert result["step_id"] == "voice"
    result = await submit(hass, result, {CONF_VOICE: VOICE})

    assert result["reason"] == "reconfigure_successful"
    subentry = entity.entry.subentries[entity.subentry.subentry_id]
    assert subentry.title == f"{VOICE} (embedded)"
    assert subentry.data == {
        CONF_ENGINE: ENGINE_EMBEDDED,
        CONF_VOICE: VOICE,
        CONF_LANGUAGES: ["en_US"],
    }
    await hass.async_block_till_done(wait_background_tasks=True)
    parts = await stream(entity_of(hass, entity), "Hello there.")
    assert wav_format(parts[0])[:3] == (22050, 2, 1)


async def test_the_entity_offers_the_servers_voices_as_options(
    hass: HomeAssistant, setup_companion: SetupCompanion, piper: PiperPeer
) -> None:
    entity = await setup_voice(hass, setup_companion, piper.host, piper.port)
    await hass.async_block_till_done(wait_background_tasks=True)  # it has asked the server

    assert entity.supported_options == [
        tts.ATTR_VOICE,
        "speaker",
        tts.ATTR_PREFERRED_FORMAT,
        *SAMPLE_OPTIONS,  # seen, to know HA converts the stream (not met: HA converts anyway)
    ]
    voices = entity.async_get_supported_voices("en_US")
    assert voices is not None
    ids = [voice.voice_id for voice in voices]
    assert VOICE in ids
    assert ADVERTISED_NOT_INSTALLED in ids  # what the server advertises
    names = [voice.name for voice in voices]
    assert names == sorted(names)
    assert entity.async_get_supported_voices("xx_XX") is None


async def test_a_request_speaks_with_the_voice_it_asks_for(
    hass: HomeAssistant, setup_companion: SetupCompanion, proxy: WyomingProxy
) -> None:
    # the sub-entry's own voice is not installed: only the requested one can speak
    entity = await setup_voice(
        hass, setup_companion, proxy.host, proxy.port, ADVERTISED_NOT_INSTALLED
    )
    issue_id = f"tts_voice_{entity.subentry.subentry_id}"
    server = f"{proxy.host}:{proxy.port}"
    async_report_missing_voice(
        hass, entity.entry.entry_id, entity.subentry.subentry_id, ADVERTISED_NOT_INSTALLED, server
    )
    media_id = tts.generate_media_source_id(
        hass,
        "Hello there.",
        engine=entity.entity_id,
        language="en_US",
        options={tts.ATTR_VOICE: VOICE, tts.ATTR_PREFERRED_FORMAT: "wav"},
        cache=False,
    )

    extension, data = await tts.async_get_media_source_audio(hass, media_id)

    assert extension == "wav"
    assert len(data) - 44 > 22050 // 2
    assert proxy.texts == ["Hello there."]
    assert proxy.voices == [VOICE]
    # another voice spoke: the sub-entry's own voice is still missing
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None


async def test_an_unknown_voice_or_speaker_is_a_clear_error(
    hass: HomeAssistant, setup_companion: SetupCompanion, proxy: WyomingProxy
) -> None:
    entity = await setup_voice(hass, setup_companion, proxy.host, proxy.port)

    with pytest.raises(ServiceValidationError) as raised:
        await entity.async_get_tts_audio("Hi.", "en_US", {tts.ATTR_VOICE: "xx_XX-nobody-low"})
    assert raised.value.translation_key == "tts_voice_unknown"
    assert raised.value.translation_placeholders is not None
    assert raised.value.translation_placeholders["voice"] == "xx_XX-nobody-low"
    assert VOICE in raised.value.translation_placeholders["voices"]

    with pytest.raises(ServiceValidationError) as raised:
        await entity.async_get_tts_audio("Hi.", "en_US", {"speaker": "bob"})
    assert raised.value.translation_key == "tts_speaker_unknown"
    assert raised.value.translation_placeholders == {
        "voice": VOICE,
        "speaker": "bob",
        "speakers": "-",
    }

    assert proxy.texts == []  # nothing was spoken
    issue_id = f"tts_voice_{entity.subentry.subentry_id}"
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None
