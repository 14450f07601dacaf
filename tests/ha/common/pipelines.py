"""Assist pipelines for tests: our agent and voice on one, and text runs through it.

``create_pipeline`` makes an Assist pipeline (our agent, a TTS, and speech to text if the
run starts from audio). ``async_voice`` (the ``voice`` fixture) sets up Assist, an entry with
a persona and a Piper voice (through the recording proxy) and a pipeline of the two; the
proxy's journal notes when HA opens the voice's stream (``STREAM_OPENED``) among what Piper
is asked. ``keep_turns`` keeps every turn the engine starts, to cancel one as a barge-in
would or to read its speech.

Text pipeline runs (intent → tts) start as HA's websocket API starts them; the run's TTS
stream is read the way a satellite reads it: once HA says it is open.
``emulate_runs_kept_elsewhere`` makes HA keep its running pipeline runs as a newer release
might: the runs work as ever, only not in the table ``compat.async_pipeline_runs`` reads.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
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
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.engine import Engine
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.request import TurnRequest
from custom_components.companion_agent.runtime import CompanionRuntime
from custom_components.companion_agent.tts import CompanionTtsEntity
from tests.ha.common import SetupCompanion, entity_id, persona, tts_entity, wyoming_voice
from tests.support.wyoming_proxy import WyomingProxy

STREAM_OPENED = "stream opened"


async def create_pipeline(
    hass: HomeAssistant, name: str, agent: str, tts: str, stt: str | None = None
) -> Pipeline:
    """Create an Assist pipeline: ``agent`` answers, ``tts`` speaks, ``stt`` listens."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
    return await store.async_create_item(
        {
            "name": name,
            "conversation_engine": agent,
            "conversation_language": "en",
            "language": "en",
            "stt_engine": stt,
            "stt_language": "en" if stt is not None else None,
            "tts_engine": tts,
            "tts_language": "en_US",
            "tts_voice": None,
            "wake_word_entity": None,
            "wake_word_id": None,
            "prefer_local_intents": False,
        }
    )


@dataclass
class Voice:
    """Our agent and voice in one entry, and what the test watches of them."""

    entry: MockConfigEntry
    agent: str
    tts: CompanionTtsEntity
    pipeline: Pipeline
    journal: list[str]
    turns: list[Turn] = field(default_factory=list)

    @property
    def runtime(self) -> CompanionRuntime:
        """Return the entry's runtime."""
        runtime: CompanionRuntime = self.entry.runtime_data
        return runtime


def keep_turns(engine: Engine, turns: list[Turn]) -> None:
    """Keep every turn ``engine`` starts in ``turns`` (for the engine's life)."""
    start = engine.start_turn

    def start_and_keep(request: TurnRequest) -> Turn:
        """Start the turn and keep its handle."""
        turn = start(request)
        turns.append(turn)
        return turn

    setattr(engine, "start_turn", start_and_keep)  # noqa: B010 - the instance, not the class


async def async_voice(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
    *,
    llm_apis: Sequence[str] = (),
) -> Voice:
    """Set up what ``voice`` does, the persona on ``llm_apis`` (HA's tools: none by default)."""
    entry = await setup_companion(persona(llm_apis=llm_apis), wyoming_voice(proxy.host, proxy.port))
    agent = entity_id(hass, entry, "conversation")
    tts = tts_entity(hass, entry)
    pipeline = await create_pipeline(hass, "Companion voice", agent, tts.entity_id)
    journal = proxy.journal
    watched = Voice(entry=entry, agent=agent, tts=tts, pipeline=pipeline, journal=journal)
    opened = CompanionTtsEntity.async_stream_tts_audio

    async def stream_opened(
        entity: CompanionTtsEntity, request: TTSAudioRequest
    ) -> TTSAudioResponse:
        """Note that HA opened the stream, then open it."""
        journal.append(STREAM_OPENED)
        return await opened(entity, request)

    monkeypatch.setattr(CompanionTtsEntity, "async_stream_tts_audio", stream_opened)
    keep_turns(watched.runtime.engine, watched.turns)
    return watched


@dataclass
class TextRun:
    """One pipeline run in flight: its events, its task, and its TTS audio."""

    timeout: float
    events: list[PipelineEvent] = field(default_factory=list)
    speaking: asyncio.Event = field(default_factory=asyncio.Event)
    run: PipelineRun | None = None
    task: asyncio.Task[None] | None = None

    def note(self, event: PipelineEvent) -> None:
        """Keep the event; note when HA opens the TTS stream (or ends the run without one)."""
        self.events.append(event)
        opened = event.type is PipelineEventType.INTENT_PROGRESS and (event.data or {}).get(
            "tts_start_streaming"
        )
        if opened or event.type in (PipelineEventType.TTS_END, PipelineEventType.RUN_END):
            self.speaking.set()

    async def audio(self) -> AsyncIterator[bytes]:
        """Yield the run's TTS stream as a satellite fetches it, once HA opens it."""
        await asyncio.wait_for(self.speaking.wait(), self.timeout)
        assert self.run is not None
        assert self.run.tts_stream is not None
        async for chunk in self.run.tts_stream.async_stream_result():
            yield chunk

    async def done(self) -> None:
        """Wait for the run to end."""
        assert self.task is not None
        await asyncio.wait_for(self.task, self.timeout)


WAV_OUT = {"preferred_format": "wav"}
"""WAV out, as Piper makes it: no conversion."""
SATELLITE_OUT = {
    "preferred_format": "wav",
    "preferred_sample_rate": 16000,
    "preferred_sample_channels": 1,
    "preferred_sample_bytes": 2,
}
"""What HA's Wyoming and ESPHome satellites ask for: HA converts the stream with ffmpeg."""


def start_text_run(
    hass: HomeAssistant,
    pipeline: Pipeline,
    text: str,
    *,
    timeout: float,
    audio_output: Mapping[str, str | int] | None = WAV_OUT,
) -> TextRun:
    """Start a text pipeline run of ``text``; ``audio_output`` None: the browser's default."""
    flight = TextRun(timeout=timeout)
    run = flight.run = PipelineRun(
        hass,
        context=Context(),
        pipeline=pipeline,
        start_stage=PipelineStage.INTENT,
        end_stage=PipelineStage.TTS,
        event_callback=flight.note,
        tts_audio_output=dict(audio_output) if audio_output is not None else None,
    )

    async def execute() -> None:
        with chat_session.async_get_chat_session(hass) as session:
            pipeline_input = PipelineInput(run=run, session=session, intent_input=text)
            await pipeline_input.validate()
            await pipeline_input.execute()

    flight.task = asyncio.create_task(execute())
    return flight


class RunsKeptElsewhere:
    """Assist's record of running pipeline runs, kept under another name than 2026.2.3's."""

    def __init__(self) -> None:
        """Start with no runs."""
        self.by_pipeline: dict[str, dict[str, PipelineRun]] = defaultdict(dict)

    def add_run(self, pipeline_run: PipelineRun) -> None:
        """Note a run that started."""
        self.by_pipeline[pipeline_run.pipeline.id][pipeline_run.id] = pipeline_run

    def remove_run(self, pipeline_run: PipelineRun) -> None:
        """Forget a run that ended."""
        self.by_pipeline[pipeline_run.pipeline.id].pop(pipeline_run.id)


def emulate_runs_kept_elsewhere(hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the set-up Assist keep its runs where a newer HA might (no ``_pipeline_runs``)."""
    monkeypatch.setattr(hass.data[KEY_ASSIST_PIPELINE], "pipeline_runs", RunsKeptElsewhere())
