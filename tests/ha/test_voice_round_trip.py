"""The whole voice round trip through a real HA's Assist pipeline, with every peer real.

Piper speaks a command → our STT entity (whisper) → the pipeline's conversation agent, our
persona, whose scripted model calls HassTurnOn → HA's demo kitchen light turns on → the
answer goes to our TTS entity (piper) → its audio, through our STT entity again, is the
answer. Whisper transcribes twice here.
"""

import io
import wave
from collections.abc import Iterator
from unittest.mock import patch

import pytest
from homeassistant.components import conversation, stt, tts
from homeassistant.components.assist_pipeline import (
    PipelineEvent,
    PipelineEventType,
    async_pipeline_from_audio_stream,
)
from homeassistant.components.assist_pipeline.pipeline import (
    async_create_default_pipeline,
    async_update_pipeline,
)
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import Platform
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from wyoming.audio import AudioChunk, AudioChunkConverter

from tests.ha.common import (
    SetupCompanion,
    async_load,
    entity_id,
    persona,
    speech_to_text,
    stt_entity,
    wyoming_voice,
)
from tests.ha.common.audio import metadata
from tests.support.chat_requests import user_text
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.whisper import RATE, WhisperPeer, heard_as, pieces, spoken
from tests.support.whisper import words as words_of

COMMAND = "Turn on the kitchen light."
ANSWER = "The kitchen light is on now."
KITCHEN = "light.kitchen_lights"
WHISPER = "faster-whisper (model)"  # as the flow names the peer's model, by its path


@pytest.fixture(autouse=True)
def only_demo_lights() -> Iterator[None]:
    """Load only the demo lights."""
    with patch(
        "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM",
        [Platform.LIGHT],
    ):
        yield


async def set_up_house(hass: HomeAssistant) -> None:
    """Set up HA's demo lights, expose the kitchen's to Assist, and turn it off."""
    await async_load(hass, MockConfigEntry(domain="demo"))
    async_expose_entity(hass, conversation.DOMAIN, KITCHEN, True)
    await hass.services.async_call("light", "turn_off", {"entity_id": KITCHEN}, blocking=True)
    assert hass.states.get(KITCHEN).state == "off"  # type: ignore[union-attr]


def pcm_at_16k(wav_stream: bytes) -> bytes:
    """Return the PCM of a streamed WAV (its header counts no frames) as 16 kHz mono."""
    with wave.open(io.BytesIO(wav_stream), "rb") as reader:
        rate, width, channels = reader.getframerate(), reader.getsampwidth(), reader.getnchannels()
    chunk = AudioChunk(rate=rate, width=width, channels=channels, audio=wav_stream[44:])
    return AudioChunkConverter(rate=RATE, width=2, channels=1).convert(chunk).audio


def event_data(events: list[PipelineEvent], kind: PipelineEventType) -> dict[str, object]:
    """Return the data of the run's one event of ``kind``."""
    (data,) = [event.data or {} for event in events if event.type == kind]
    return data


async def test_a_spoken_command_turns_on_the_light_and_the_spoken_answer_is_heard(
    hass: HomeAssistant,
    llm_server: LLMServer,
    setup_companion: SetupCompanion,
    piper: PiperPeer,
    whisper: WhisperPeer,
) -> None:
    assert await async_setup_component(hass, "assist_pipeline", {})
    await set_up_house(hass)
    entry = await setup_companion(
        persona(llm_apis=[llm.LLM_API_ASSIST]),
        wyoming_voice(piper.host, piper.port, piper.voice),
        speech_to_text(
            whisper.host,
            whisper.port,
            whisper.model,
            languages=["en"],
            title="faster-whisper (model)",
        ),
    )
    stt_id, tts_id = entity_id(hass, entry, "stt"), entity_id(hass, entry, "tts")
    pipeline = await async_create_default_pipeline(
        hass, stt_engine_id=stt_id, tts_engine_id=tts_id, pipeline_name="Companion"
    )
    assert pipeline is not None
    assert (pipeline.stt_language, pipeline.tts_language) == ("en", "en_US")
    await async_update_pipeline(
        hass,
        pipeline,
        conversation_engine=entity_id(hass, entry, "conversation"),
        conversation_language="en",
        # HA's default is the first voice the entity offers: once the entity has asked the
        # server (in the background), one piper advertises but has not installed here.
        tts_voice=piper.voice,
    )
    llm_server.script(
        Reply.tool_calls(("call_1", "HassTurnOn", '{"name": "Kitchen Lights"}')),
        Reply.text(ANSWER),
    )
    command = await spoken(piper, COMMAND)
    events: list[PipelineEvent] = []

    await async_pipeline_from_audio_stream(
        hass,
        context=Context(),
        event_callback=events.append,
        stt_metadata=metadata(""),  # the pipeline fills in its STT language
        stt_stream=pieces(command, 640),
        pipeline_id=pipeline.id,
        tts_audio_output={tts.ATTR_PREFERRED_FORMAT: "wav"},  # as piper gives it: no ffmpeg
    )

    assert [e.type for e in events if e.type == PipelineEventType.ERROR] == []
    heard = event_data(events, PipelineEventType.STT_END)["stt_output"]
    assert isinstance(heard, dict)
    assert words_of(heard["text"]) == words_of(COMMAND)
    assert words_of(user_text(llm_server.requests[0]))[-5:] == words_of(COMMAND)
    assert hass.states.get(KITCHEN).state == "on"  # type: ignore[union-attr]
    answer = event_data(events, PipelineEventType.INTENT_END)["intent_output"]
    assert isinstance(answer, dict)
    assert answer["response"]["speech"]["plain"]["speech"] == ANSWER
    tts_output = event_data(events, PipelineEventType.TTS_END)["tts_output"]
    assert isinstance(tts_output, dict)
    stream = tts.async_get_stream(hass, tts_output["token"])
    assert stream is not None
    wav = b"".join([part async for part in stream.async_stream_result()])

    echo = await stt_entity(hass, entry).async_process_audio_stream(
        metadata("en"), pieces(pcm_at_16k(wav))
    )

    assert echo.result is stt.SpeechResultState.SUCCESS
    assert heard_as(echo.text or "", ANSWER), echo.text
