"""The STT sub-entry and entity through a real HA, against the real whisper and a scripted server.

No transcription by whisper here (the voice round trip does it); the entity's own work —
format, language, failures — is checked against the scripted server's real socket.
"""

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from homeassistant import config_entries
from homeassistant.components import stt
from homeassistant.components.stt.const import DATA_COMPONENT
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion

from custom_components.companion_agent.const import (
    CONF_LANGUAGES,
    CONF_MODEL,
    SUBENTRY_STT,
)
from custom_components.companion_agent.stt import CompanionSttEntity
from tests.ha.common import SetupCompanion, closed_port, speech_to_text, stt_entity
from tests.ha.common.audio import metadata
from tests.support.asr_server import TEXT, Behaviour, ScriptedAsrServer
from tests.support.whisper import WhisperPeer
from tests.support.wyoming_events import wire_form


async def silence(chunks: int = 10) -> AsyncIterator[bytes]:
    """Yield a few 10 ms chunks of silence, as the pipeline would."""
    for _ in range(chunks):
        yield bytes(320)


async def setup_stt(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    host: str,
    port: int,
    *,
    languages: tuple[str, ...] = ("en", "zh"),
) -> CompanionSttEntity:
    """Set up an entry whose only sub-entry is the ``tiny`` STT model there; return its entity."""
    entry = await setup_companion(speech_to_text(host, port, "tiny", languages=languages))
    return stt_entity(hass, entry)


async def start_flow(hass: HomeAssistant, entry: MockConfigEntry, host: str, port: int) -> str:
    """Start the STT sub-entry flow, give it the server, and return the flow id."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_STT), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_HOST: host, CONF_PORT: port}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "model", result.get("errors")
    return result["flow_id"]


async def test_the_subentry_flow_asks_for_the_server_then_a_model(
    hass: HomeAssistant, setup_entry: MockConfigEntry, whisper: WhisperPeer
) -> None:
    flow_id = await start_flow(hass, setup_entry, whisper.host, whisper.port)
    progress = hass.config_entries.subentries.async_get(flow_id)
    assert progress is not None

    result = await hass.config_entries.subentries.async_configure(
        flow_id, {CONF_MODEL: whisper.model, CONF_LANGUAGES: ["en"]}
    )

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "faster-whisper (model)"  # the peer names its model by its path
    assert result["data"] == {
        CONF_HOST: whisper.host,
        CONF_PORT: whisper.port,
        CONF_MODEL: whisper.model,
        CONF_LANGUAGES: ["en"],
    }
    await hass.async_block_till_done()
    (entity_id,) = hass.states.async_entity_ids("stt")
    entity = hass.data[DATA_COMPONENT].get_entity(entity_id)
    assert entity is not None
    assert entity.supported_languages == ["en"]
    assert entity.check_metadata(metadata("en"))


async def test_the_subentry_flow_offers_the_models_languages_and_checks_them(
    hass: HomeAssistant, setup_entry: MockConfigEntry, socket_enabled: None
) -> None:
    async with ScriptedAsrServer() as server:
        flow_id = await start_flow(hass, setup_entry, server.host, server.port)
        result = await hass.config_entries.subentries.async_configure(
            flow_id, {CONF_MODEL: "tiny", CONF_LANGUAGES: ["de"]}
        )
        assert result["type"] is FlowResultType.FORM
        assert result["errors"] == {CONF_LANGUAGES: "language_unsupported"}
        schema = result["data_schema"]
        assert schema is not None
        models = schema.schema[CONF_MODEL].config["options"]
        assert models == [{"label": "tiny", "value": "tiny"}, {"label": "Small", "value": "small"}]
        assert schema.schema[CONF_LANGUAGES].config["options"] == ["de", "en", "zh"]

        result = await hass.config_entries.subentries.async_configure(flow_id, {CONF_MODEL: "tiny"})

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "scripted (tiny)"
    assert result["data"][CONF_LANGUAGES] == ["en", "zh"]  # none chosen: all of the model's


async def test_the_subentry_flow_says_cannot_connect(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    result = await hass.config_entries.subentries.async_init(
        (setup_entry.entry_id, SUBENTRY_STT), context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: closed_port()}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    assert result["errors"] == {"base": "cannot_connect"}


@pytest.mark.parametrize(
    ("asked", "sent"), [("en", "en"), ("en-US", "en"), ("zh-Hans", "zh"), ("fr", None)]
)
async def test_the_audio_goes_out_with_the_servers_language_and_the_text_comes_back(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    snapshot: SnapshotAssertion,
    asked: str,
    sent: str | None,
) -> None:
    async with ScriptedAsrServer() as server:
        entity = await setup_stt(hass, setup_companion, server.host, server.port)
        described = len(server.events)  # the entity asked for the server's info at setup

        result = await entity.async_process_audio_stream(metadata(asked), silence())

    assert result == stt.SpeechResult(TEXT, stt.SpeechResultState.SUCCESS)
    transcribe = server.events[described]
    assert transcribe.data.get("language") == sent
    assert wire_form(server.events[described:]) == snapshot  # 16 kHz mono, 10 ms chunks


async def test_a_refused_connection_is_a_failed_result_and_a_warning(
    hass: HomeAssistant, setup_companion: SetupCompanion, caplog: pytest.LogCaptureFixture
) -> None:
    port = closed_port()
    entity = await setup_stt(hass, setup_companion, "127.0.0.1", port)

    with caplog.at_level(logging.WARNING):
        result = await entity.async_process_audio_stream(metadata(), silence())

    assert result == stt.SpeechResult(None, stt.SpeechResultState.ERROR)
    assert f"127.0.0.1:{port}" in caplog.text


async def test_a_server_that_closes_mid_stream_is_a_failed_result(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    async with ScriptedAsrServer(behaviour="close") as server:
        entity = await setup_stt(hass, setup_companion, server.host, server.port)

        result = await entity.async_process_audio_stream(metadata(), silence(100))

        assert result == stt.SpeechResult(None, stt.SpeechResultState.ERROR)
        await server.wait_idle()


async def test_reconfigure_moves_the_model_to_another_server_checked_live(
    hass: HomeAssistant, setup_companion: SetupCompanion, socket_enabled: None
) -> None:
    async with ScriptedAsrServer() as old, ScriptedAsrServer() as new:
        entity = await setup_stt(hass, setup_companion, old.host, old.port)
        entry = entity.entry
        subentry_id = entity.subentry.subentry_id
        result = await hass.config_entries.subentries.async_init(
            (entry.entry_id, SUBENTRY_STT),
            context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": subentry_id},
        )
        assert result["type"] is FlowResultType.FORM
        schema = result["data_schema"]
        assert schema is not None
        suggested = {
            str(key): key.description.get("suggested_value")
            for key in schema.schema
            if key.description
        }
        assert suggested == {CONF_HOST: old.host, CONF_PORT: old.port}

        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: closed_port()}
        )
        assert result["errors"] == {"base": "cannot_connect"}  # checked, not just stored
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_HOST: new.host, CONF_PORT: new.port}
        )
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_MODEL: "small", CONF_LANGUAGES: ["en"]}
        )
        await hass.async_block_till_done()

    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    subentry = entry.subentries[subentry_id]
    assert subentry.data == {
        CONF_HOST: new.host,
        CONF_PORT: new.port,
        CONF_MODEL: "small",
        CONF_LANGUAGES: ["en"],
    }
    assert subentry.title == "scripted (small)"


@pytest.mark.parametrize("behaviour", ["stream", "stream_only"])
async def test_a_server_streaming_its_transcript_gives_the_whole_text(
    hass: HomeAssistant, setup_companion: SetupCompanion, behaviour: Behaviour
) -> None:
    """transcript-chunk events, with or without a final transcript: the pipeline gets it all."""
    async with ScriptedAsrServer(behaviour=behaviour) as server:
        entity = await setup_stt(hass, setup_companion, server.host, server.port)

        result = await entity.async_process_audio_stream(metadata("en-GB"), silence())

    assert result == stt.SpeechResult(TEXT, stt.SpeechResultState.SUCCESS)
    assert server.events[0].data.get("language") == "en"


async def test_a_model_listing_no_languages_offers_ha_language_and_sends_none(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """No languages known: the entity offers HA's, and lets the server choose."""
    hass.config.language = "zh-Hans"
    async with ScriptedAsrServer() as server:
        entity = await setup_stt(hass, setup_companion, server.host, server.port, languages=())

        assert entity.supported_languages == ["zh-Hans"]
        result = await entity.async_process_audio_stream(metadata("zh-Hans"), silence())

    assert result.text == TEXT
    assert "language" not in server.events[0].data


async def test_emulated_2026_5_audio_processing_takes_gain_and_vad_not_noise_suppression(
    hass: HomeAssistant, setup_companion: SetupCompanion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HA 2026.5's ``stt.SpeechAudioProcessing`` (core PR 167246), emulated: what we ask for.

    Before 2026.5 HA has no such class and never reads the property.
    """

    @dataclass
    class SpeechAudioProcessing:
        """``homeassistant.components.stt.SpeechAudioProcessing`` of 2026.5."""

        requires_external_vad: bool
        prefers_auto_gain_enabled: bool
        prefers_noise_reduction_enabled: bool

    entry = await setup_companion(speech_to_text("127.0.0.1", closed_port()))
    entity = stt_entity(hass, entry)
    assert entity.audio_processing is None
    monkeypatch.setattr(stt, "SpeechAudioProcessing", SpeechAudioProcessing, raising=False)
    assert entity.audio_processing == SpeechAudioProcessing(
        requires_external_vad=True,
        prefers_auto_gain_enabled=True,
        prefers_noise_reduction_enabled=False,
    )
