"""The TTS sub-entry and entity through a real HA, speaking with the real wyoming-piper."""

import asyncio
import json
from collections.abc import AsyncGenerator

import pytest
from homeassistant import config_entries
from homeassistant.components import tts
from homeassistant.components.tts.const import DATA_COMPONENT
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion

from custom_components.companion_agent.const import (
    CONF_LANGUAGES,
    CONF_SPEAKER,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.repairs import async_report_missing_voice
from custom_components.companion_agent.tts import CompanionTtsEntity
from tests.ha.common import VOICE, SetupCompanion, choose, closed_port
from tests.ha.common.audio import (
    ADVERTISED_NOT_INSTALLED,
    CLEAN,
    MESSY,
    STREAMING_FRAMES,
    chunks,
    setup_voice,
    stream,
    wav_format,
)
from tests.support.piper import PiperPeer
from tests.support.wyoming_events import wire_form
from tests.support.wyoming_proxy import WyomingProxy


@pytest.fixture
async def piper_tts(
    hass: HomeAssistant, setup_companion: SetupCompanion, proxy: WyomingProxy
) -> CompanionTtsEntity:
    """Set up Piper's voice behind the recording proxy; return its entity."""
    return await setup_voice(hass, setup_companion, proxy.host, proxy.port)


async def test_the_subentry_flow_asks_for_the_server_then_a_voice(
    hass: HomeAssistant, setup_entry: MockConfigEntry, piper: PiperPeer
) -> None:
    result = await hass.config_entries.subentries.async_init(
        (setup_entry.entry_id, SUBENTRY_TTS), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.MENU
    assert result["step_id"] == "user"
    assert result["menu_options"] == ["server", "embedded"]
    result = await choose(hass, result, "server")
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "server"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_HOST: piper.host, CONF_PORT: piper.port}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "voice"
    assert result["data_schema"] is not None
    options = result["data_schema"].schema[CONF_VOICE].config["options"]
    assert VOICE in [option["value"] for option in options]

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_VOICE: VOICE}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == VOICE
    assert result["data"] == {
        CONF_HOST: piper.host,
        CONF_PORT: piper.port,
        CONF_VOICE: VOICE,
        CONF_LANGUAGES: ["en_US"],
    }
    await hass.async_block_till_done()
    (entity_id,) = hass.states.async_entity_ids("tts")
    entity = hass.data[DATA_COMPONENT].get_entity(entity_id)
    assert entity is not None
    assert entity.supported_languages == ["en_US"]
    assert entity.default_language == "en_US"


async def test_the_subentry_flow_says_cannot_connect(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    result = await hass.config_entries.subentries.async_init(
        (setup_entry.entry_id, SUBENTRY_TTS), context={"source": config_entries.SOURCE_USER}
    )
    result = await choose(hass, result, "server")
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: closed_port()}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "server"
    assert result["errors"] == {"base": "cannot_connect"}


async def test_streamed_text_reaches_piper_as_clean_sentences_and_comes_back_as_wav(
    hass: HomeAssistant,
    proxy: WyomingProxy,
    piper_tts: CompanionTtsEntity,
    snapshot: SnapshotAssertion,
) -> None:
    assert piper_tts.async_supports_streaming_input()

    parts = await stream(piper_tts, MESSY)

    assert wav_format(parts[0]) == (22050, 2, 1, STREAMING_FRAMES)  # streaming: no length
    assert len(parts[0]) == 44  # the header alone, before any PCM
    assert sum(len(part) for part in parts[1:]) > 22050  # over half a second of speech
    assert proxy.texts == CLEAN
    await proxy.wait_idle()  # the socket is closed once the stream ends
    assert wire_form(proxy.sent) == snapshot


async def test_a_sentence_is_spoken_before_the_rest_of_the_text_arrives(
    hass: HomeAssistant, proxy: WyomingProxy, piper_tts: CompanionTtsEntity
) -> None:
    rest = asyncio.Event()

    async def reply() -> AsyncGenerator[str]:
        yield "Good morning. The kettle"
        await rest.wait()
        yield " is on."

    response = await piper_tts.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=reply())
    )
    data = response.data_gen
    header = await anext(data)
    first = await asyncio.wait_for(anext(data), 10)  # while the text is still held back

    assert wav_format(header)[3] == STREAMING_FRAMES
    assert first
    assert proxy.texts == ["Good morning."]
    rest.set()
    assert [part async for part in data]
    assert proxy.texts == ["Good morning.", "The kettle is on."]


async def test_the_subentry_flow_asks_for_a_speaker_when_the_voice_has_several(
    hass: HomeAssistant, setup_entry: MockConfigEntry, socket_enabled: None
) -> None:
    info = {
        "tts": [
            {
                "name": "piper",
                "voices": [
                    {
                        "name": "en_GB-pair-low",
                        "languages": ["en_GB"],
                        "speakers": [{"name": "ann"}, {"name": "bob"}],
                    },
                ],
            }
        ]
    }

    async def describe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()  # the describe event
        body = json.dumps({"type": "info", "data": info}).encode()
        writer.write(body + b"\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(describe, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        result = await hass.config_entries.subentries.async_init(
            (setup_entry.entry_id, SUBENTRY_TTS), context={"source": config_entries.SOURCE_USER}
        )
        result = await choose(hass, result, "server")
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: port}
        )
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_VOICE: "en_GB-pair-low"}
        )
        assert result["type"] is FlowResultType.FORM
        assert result["step_id"] == "speaker"
        assert result["description_placeholders"] == {"voice": "en_GB-pair-low"}
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_SPEAKER: "bob"}
        )

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "en_GB-pair-low (bob)"
    assert result["data"] == {
        CONF_HOST: "127.0.0.1",
        CONF_PORT: port,
        CONF_VOICE: "en_GB-pair-low",
        CONF_SPEAKER: "bob",
        CONF_LANGUAGES: ["en_GB"],
    }


async def test_a_cancelled_stream_closes_the_socket(
    hass: HomeAssistant, proxy: WyomingProxy, piper_tts: CompanionTtsEntity
) -> None:
    response = await piper_tts.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=chunks(MESSY))
    )
    data = response.data_gen
    assert len(await anext(data)) == 44
    await anext(data)  # the first sentence's audio: piper is connected
    await data.aclose()

    await proxy.wait_idle()
    assert proxy.texts == CLEAN[:1]


async def test_the_media_source_streams_a_wav_of_the_whole_message(
    hass: HomeAssistant, proxy: WyomingProxy, piper_tts: CompanionTtsEntity
) -> None:
    media_id = tts.generate_media_source_id(
        hass,
        MESSY,
        engine=piper_tts.entity_id,
        language="en_US",
        options={tts.ATTR_PREFERRED_FORMAT: "wav"},  # as piper sends it: no ffmpeg
        cache=False,
    )

    extension, data = await tts.async_get_media_source_audio(hass, media_id)

    assert extension == "wav"
    assert wav_format(data) == (22050, 2, 1, STREAMING_FRAMES)  # HA streams it: no length
    assert len(data) - 44 > 22050
    assert proxy.texts == CLEAN


async def test_the_whole_message_makes_one_complete_wav(
    hass: HomeAssistant,
    proxy: WyomingProxy,
    piper_tts: CompanionTtsEntity,
    snapshot: SnapshotAssertion,
) -> None:

    extension, data = await piper_tts.async_get_tts_audio(MESSY, "en_US", {})

    assert extension == "wav"
    assert data is not None
    rate, width, channels, frames = wav_format(data)
    assert (rate, width, channels) == (22050, 2, 1)
    assert frames > 22050
    assert len(data) == 44 + frames * width
    assert proxy.texts == CLEAN
    assert wire_form(proxy.sent) == snapshot


async def test_a_refused_connection_raises_a_translated_error(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    entity = await setup_voice(hass, setup_companion, "127.0.0.1", closed_port())

    with pytest.raises(HomeAssistantError) as raised:
        await stream(entity, "Hello there.")
    assert raised.value.translation_key == "tts_unreachable"
    with pytest.raises(HomeAssistantError) as raised:
        await entity.async_get_tts_audio("Hello there.", "en_US", {})
    assert raised.value.translation_key == "tts_unreachable"


@pytest.mark.parametrize("voice", ["xx_XX-nobody-low", ADVERTISED_NOT_INSTALLED])
async def test_a_voice_the_server_lacks_raises_a_repair_issue(
    hass: HomeAssistant, setup_companion: SetupCompanion, piper: PiperPeer, voice: str
) -> None:
    entity = await setup_voice(hass, setup_companion, piper.host, piper.port, voice)

    with pytest.raises(HomeAssistantError) as raised:
        await stream(entity, "Hello there.")

    assert raised.value.translation_key == "tts_voice_missing"
    issue = ir.async_get(hass).async_get_issue(DOMAIN, f"tts_voice_{entity.subentry.subentry_id}")
    assert issue is not None
    assert issue.translation_key == "tts_voice_missing"
    assert issue.translation_placeholders == {
        "voice": voice,
        "server": f"{piper.host}:{piper.port}",
    }


async def test_the_voice_issue_goes_once_the_voice_speaks_again(
    hass: HomeAssistant, setup_companion: SetupCompanion, piper: PiperPeer
) -> None:
    entity = await setup_voice(hass, setup_companion, piper.host, piper.port)
    issue_id = f"tts_voice_{entity.subentry.subentry_id}"
    async_report_missing_voice(
        hass, entity.entry.entry_id, entity.subentry.subentry_id, VOICE, "127.0.0.1:1"
    )
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None

    assert await stream(entity, "Hello there.")

    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None
