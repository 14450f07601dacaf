"""Speech head starts through a real HA: an Assist pipeline, our agent, our voice, real Piper.

Each test runs a text pipeline (intent → tts) as HA's websocket API runs one, with our
agent streaming from the scripted model server (held back on cue) and our TTS entity
speaking through a recording proxy in front of the real wyoming-piper. Order is proved by
a journal the proxy and the entity's stream share, never by the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

import pytest
from homeassistant.components.assist_pipeline.pipeline import (  # requirements_test.txt
    KEY_ASSIST_PIPELINE,
    Pipeline,
    PipelineEvent,
    PipelineEventType,
    PipelineInput,
    PipelineRun,
    PipelineStage,
)
from homeassistant.components.tts import TTSAudioResponse
from homeassistant.components.tts.const import DATA_COMPONENT
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.const import CONF_API_KEY, CONF_HOST, CONF_PORT
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_LANGUAGES,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_CONVERSATION,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.request import TurnRequest
from custom_components.companion_agent.runtime import CompanionRuntime
from custom_components.companion_agent.tts import CompanionTtsEntity
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0
VOICE = "en_US-joe-medium"
FIRST = "Good morning."
SECOND = "The kettle is on and the tea will be ready in a minute or two."
THIRD = "Biscuits are in the blue tin."
STREAM_OPENED = "stream opened"


@dataclass
class Voice:
    """Our agent and voice in one entry, and what the test watches of them."""

    entry: MockConfigEntry
    agent: str
    tts: CompanionTtsEntity
    pipeline: Pipeline
    journal: list[str]
    turns: list[Turn] = field(default_factory=list)


@pytest.fixture
async def voice(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> Voice:
    """Set up Assist, an entry with a persona and a voice (via the proxy), and a pipeline."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="test-model",
        data={CONF_BASE_URL: llm_server.url, CONF_API_KEY: "", CONF_MODEL: "test-model"},
        subentries_data=[
            {
                "subentry_type": SUBENTRY_CONVERSATION,
                "data": {CONF_PROFILE: "default"},
                "title": "Companion",
                "unique_id": None,
            },
            {
                "subentry_type": SUBENTRY_TTS,
                "data": {
                    CONF_HOST: proxy.host,
                    CONF_PORT: proxy.port,
                    CONF_VOICE: VOICE,
                    CONF_LANGUAGES: ["en_US"],
                },
                "title": VOICE,
                "unique_id": None,
            },
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    entities = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    agent = next(e.entity_id for e in entities if e.domain == "conversation")
    tts_id = next(e.entity_id for e in entities if e.domain == "tts")
    tts = hass.data[DATA_COMPONENT].get_entity(tts_id)
    assert isinstance(tts, CompanionTtsEntity)
    pipeline = await hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_create_item(
        {
            "name": "Companion voice",
            "conversation_engine": agent,
            "conversation_language": "en",
            "language": "en",
            "stt_engine": None,
            "stt_language": None,
            "tts_engine": tts_id,
            "tts_language": "en_US",
            "tts_voice": None,
            "wake_word_entity": None,
            "wake_word_id": None,
            "prefer_local_intents": False,
        }
    )
    journal = proxy.journal
    watched = Voice(entry=entry, agent=agent, tts=tts, pipeline=pipeline, journal=journal)
    opened = CompanionTtsEntity.async_stream_tts_audio

    async def stream_opened(
        entity: CompanionTtsEntity, request: TTSAudioRequest
    ) -> TTSAudioResponse:
        journal.append(STREAM_OPENED)
        return await opened(entity, request)

    monkeypatch.setattr(CompanionTtsEntity, "async_stream_tts_audio", stream_opened)
    runtime: CompanionRuntime = entry.runtime_data
    engine = runtime.engine
    start = engine.start_turn

    def start_and_keep(request: TurnRequest) -> Turn:
        turn = start(request)
        watched.turns.append(turn)
        return turn

    monkeypatch.setattr(engine, "start_turn", start_and_keep)
    return watched


@dataclass
class Run:
    """One pipeline run in flight: its events, its task, and its TTS audio."""

    events: list[PipelineEvent] = field(default_factory=list)
    speaking: asyncio.Event = field(default_factory=asyncio.Event)
    run: PipelineRun | None = None
    task: asyncio.Task[None] | None = None

    def note(self, event: PipelineEvent) -> None:
        """Keep the event; note when HA opens the TTS stream (or ends the run)."""
        self.events.append(event)
        opened = event.type is PipelineEventType.INTENT_PROGRESS and (event.data or {}).get(
            "tts_start_streaming"
        )
        if opened or event.type in (PipelineEventType.TTS_END, PipelineEventType.RUN_END):
            self.speaking.set()

    async def audio(self) -> AsyncIterator[bytes]:
        """Yield the run's TTS stream as a satellite would fetch it, once HA opens it."""
        await asyncio.wait_for(self.speaking.wait(), TIMEOUT)
        assert self.run is not None
        assert self.run.tts_stream is not None
        async for chunk in self.run.tts_stream.async_stream_result():
            yield chunk

    async def done(self) -> None:
        """Wait for the run to end."""
        assert self.task is not None
        await asyncio.wait_for(self.task, TIMEOUT)


async def run_pipeline(hass: HomeAssistant, voice: Voice, text: str) -> Run:
    """Start a text pipeline run (intent → tts) as HA's websocket API does."""
    flight = Run()
    run = PipelineRun(
        hass,
        context=Context(),
        pipeline=voice.pipeline,
        start_stage=PipelineStage.INTENT,
        end_stage=PipelineStage.TTS,
        event_callback=flight.note,
        tts_audio_output={"preferred_format": "wav"},  # as piper sends it: no ffmpeg
    )

    async def execute() -> None:
        with chat_session.async_get_chat_session(hass) as session:
            pipeline_input = PipelineInput(run=run, session=session, intent_input=text)
            await pipeline_input.validate()
            await pipeline_input.execute()

    flight.run = run
    flight.task = asyncio.create_task(execute())
    return flight


def pcm(parts: list[bytes]) -> bytes:
    """Return the PCM of a streamed WAV: everything after its 44-byte header."""
    data = b"".join(parts)
    assert len(parts[0]) == 44
    return data[44:]


async def test_the_first_sentence_goes_to_piper_before_ha_opens_the_stream(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(
        Reply(
            chunks=(
                TextChunk(f"{FIRST} The kettle"),
                TextChunk(SECOND.removeprefix("The kettle"), hold=released),
                TextChunk(f" {THIRD}"),
            )
        )
    )
    flight = await run_pipeline(hass, voice, "Morning?")

    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # while the model holds back
    assert proxy.texts == [FIRST]
    assert STREAM_OPENED not in voice.journal
    released.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert voice.journal == [
        f"piper asked: {FIRST}",
        STREAM_OPENED,
        f"piper asked: {SECOND}",
        f"piper asked: {THIRD}",
    ]
    assert proxy.texts == [FIRST, SECOND, THIRD]  # the first sentence once, not twice
    assert pcm(parts) == b"".join(proxy.audio)  # exactly what piper made, in order
    assert voice.entry.runtime_data.engine.speech_starts.waiting == 0
    await proxy.wait_idle()


async def test_the_head_start_sounds_as_the_usual_path(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    reply = f"{FIRST} {SECOND} {THIRD}"
    llm_server.script(Reply.text(reply, chunk_size=9))
    flight = await run_pipeline(hass, voice, "Morning?")
    ahead = [part async for part in flight.audio()]
    await flight.done()
    ahead_texts, proxy.texts[:] = list(proxy.texts), []

    response = await voice.tts.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=_pieces(reply))
    )
    usual = [part async for part in response.data_gen]

    assert ahead_texts == proxy.texts == [FIRST, SECOND, THIRD]
    assert ahead[0] == usual[0]  # the same WAV header: rate, width, channels
    # Piper's voices vary a little from one synthesis to the next: the length, not the bytes.
    assert abs(len(pcm(ahead)) - len(pcm(usual))) < len(pcm(usual)) // 10


async def test_a_head_start_for_other_words_is_not_played(
    hass: HomeAssistant, proxy: WyomingProxy, voice: Voice
) -> None:
    heads = voice.entry.runtime_data.engine.speech_starts
    assert voice.tts.async_speak_ahead("Something else entirely.", "trace-other")
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)
    await proxy.wait_idle()  # its synthesis is done: its connection closed
    ahead_audio = b"".join(proxy.audio)

    response = await voice.tts.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=_pieces(f"{FIRST} {THIRD}"))
    )
    parts = [part async for part in response.data_gen]

    assert proxy.texts == ["Something else entirely.", FIRST, THIRD]
    assert pcm(parts) == b"".join(proxy.audio).removeprefix(ahead_audio)
    assert heads.waiting == 1  # still waiting for its own words, until it expires
    heads.close()
    assert heads.waiting == 0


async def test_a_cancelled_turn_stops_its_audio_at_once(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(
        Reply(
            chunks=(
                TextChunk(f"{FIRST} {SECOND} {THIRD} And"),
                TextChunk(" scones too.", hold=released),
            )
        )
    )
    proxy.fault(SECOND, "stall")  # piper "works" on the second sentence until cut off
    flight = await run_pipeline(hass, voice, "Morning?")
    audio = flight.audio()
    header = await anext(audio)
    first = await anext(audio)  # the head start's audio, while the model holds back
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)

    (turn,) = voice.turns
    turn.cancel("the person spoke")
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # the sockets are closed at once
    rest = [part async for part in audio]  # and the WAV stream ends
    await flight.done()

    assert len(header) == 44
    assert proxy.texts == [FIRST]  # the stalled second is not counted; the third never asked
    assert pcm([header, first, *rest]) == b"".join(proxy.audio)  # the first sentence, whole
    assert voice.entry.runtime_data.engine.speech_starts.waiting == 0
    released.set()


async def _pieces(text: str, size: int = 9) -> AsyncGenerator[str]:
    """Yield ``text`` in pieces, as a model's stream would."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


async def test_first_audio_leaves_our_voice_while_the_model_holds_back_the_rest(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(
        Reply(
            chunks=(
                TextChunk(f"{FIRST} {SECOND} Biscuits"),  # over HA's 60 characters
                TextChunk(THIRD.removeprefix("Biscuits"), hold=released),
            )
        )
    )
    flight = await run_pipeline(hass, voice, "Morning?")
    audio = flight.audio()

    header = await asyncio.wait_for(anext(audio), TIMEOUT)
    first = await asyncio.wait_for(anext(audio), TIMEOUT)

    assert len(header) == 44
    assert first
    assert not released.is_set()
    assert flight.task is not None
    assert not flight.task.done()  # the agent still waits for the model
    assert THIRD not in proxy.texts
    released.set()
    rest = [part async for part in audio]
    await flight.done()
    assert proxy.texts == [FIRST, SECOND, THIRD]
    assert pcm([header, first, *rest]) == b"".join(proxy.audio)


async def test_a_turn_cancelled_before_ha_speaks_drops_its_head_start_and_says_nothing(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(
        Reply(chunks=(TextChunk(f"{FIRST} The"), TextChunk(" kettle.", hold=released)))
    )
    proxy.fault(FIRST, "stall")  # the head start is still at piper when the turn is cut
    flight = await run_pipeline(hass, voice, "Morning?")
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)

    (turn,) = voice.turns
    turn.cancel("the person spoke")
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # the head start's socket is closed
    await flight.done()

    assert voice.entry.runtime_data.engine.speech_starts.waiting == 0
    assert STREAM_OPENED not in voice.journal
    assert PipelineEventType.TTS_START not in [e.type for e in flight.events]
    released.set()


async def test_the_voice_cuts_the_first_clause_as_the_turn_does(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(
        Reply(
            chunks=(
                TextChunk("Good morning, my"),
                TextChunk(f" friend. {SECOND}", hold=released),
            )
        )
    )
    flight = await run_pipeline(hass, voice, "Morning?")
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # the clause, ahead of HA
    released.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert proxy.texts == ["Good morning,", "my friend.", SECOND]  # the clause once
    assert pcm(parts) == b"".join(proxy.audio)
