"""Text pipeline runs (intent → tts) started as HA's websocket API starts them.

The run's TTS stream is read the way a satellite reads it: once HA says it is open.
``emulate_runs_kept_elsewhere`` makes HA keep its running pipeline runs as a newer release
might: the runs work as ever, only not in the table ``compat.async_pipeline_runs`` reads.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping
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
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session


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
