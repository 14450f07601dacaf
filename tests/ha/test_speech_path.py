"""One speech path through a real HA: formats without HA's converter, tags never spoken.

Text pipeline runs as HA's websocket API starts them (``start_text_run``), with our agent on
the scripted model and Piper (through the recording proxy) as our voice or HA's own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from homeassistant.components import tts
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from custom_components.companion_agent.const import DOMAIN, ISSUE_COMPAT_RUNS
from custom_components.companion_agent.tts import async_mp3_ready
from tests.ha.common.pipelines import (
    STREAM_OPENED,
    Voice,
    create_pipeline,
    emulate_runs_kept_elsewhere,
    start_text_run,
)
from tests.ha.common.satellites import setup_ha_voice
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.mp3 import mp3_frames
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0
SHORT = "OK [happy]."
LONG = (
    "Sure [happy]. The kettle is on and the tea will be ready in a minute or two, "
    "the biscuits are in the tin."
)


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str | None, str | None]]:
    """Record each time HA starts its ffmpeg converter: from which format to which."""
    started: list[tuple[str | None, str | None]] = []
    convert = tts._async_convert_audio

    def recorded(
        hass: HomeAssistant,
        from_extension: str | None,
        audio: Any,
        to_extension: str | None,
        **kw: Any,
    ) -> AsyncGenerator[bytes]:
        started.append((from_extension, to_extension))
        return convert(hass, from_extension, audio, to_extension, **kw)

    monkeypatch.setattr(tts, "_async_convert_audio", recorded)
    return started


@pytest.fixture
def mp3_held(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Hold our voice's MP3 check (lameenc installed and imported) until the test sets it."""
    release = asyncio.Event()

    async def held(hass: HomeAssistant) -> bool:
        await release.wait()
        return await async_mp3_ready(hass)

    monkeypatch.setattr("custom_components.companion_agent.tts.async_mp3_ready", held)
    return release


async def read_all(audio: AsyncIterator[bytes]) -> bytes:
    """Return everything a TTS stream yields."""
    return b"".join([part async for part in audio])


async def dialog_reply(
    hass: HomeAssistant, llm_server: LLMServer, voice: Voice
) -> tuple[str, bytes]:
    """Run a text turn through the pipeline as the dialog does; return its format and audio."""
    llm_server.script(Reply.text(LONG, chunk_size=9))
    flight = start_text_run(hass, voice.pipeline, "Tea?", timeout=TIMEOUT, audio_output=None)
    data = await read_all(flight.audio())
    await flight.done()
    assert flight.run is not None
    assert flight.run.tts_stream is not None
    return flight.run.tts_stream.extension, data


async def test_a_caller_that_names_no_format_gets_our_mp3_without_ha_converting(
    hass: HomeAssistant,
    llm_server: LLMServer,
    voice: Voice,
    conversions: list[tuple[str | None, str | None]],
) -> None:
    """The dialog names no format: it gets the MP3 our voice makes, HA's ffmpeg never runs."""
    extension, data = await dialog_reply(hass, llm_server, voice)

    assert extension == "mp3"  # the default, as HA's own
    assert len(mp3_frames(data)) > 100  # several seconds of MP3 frames, end to end
    assert conversions == []  # HA never started ffmpeg


async def test_a_stream_asked_while_the_mp3_check_runs_waits_for_it(
    hass: HomeAssistant,
    mp3_held: asyncio.Event,
    llm_server: LLMServer,
    voice: Voice,
    conversions: list[tuple[str | None, str | None]],
) -> None:
    """Just after setup (lameenc still being checked) a dialog's reply is our MP3 all the same."""
    hass.loop.call_later(0.5, mp3_held.set)
    extension, data = await dialog_reply(hass, llm_server, voice)

    assert extension == "mp3"
    assert len(mp3_frames(data)) > 100
    assert conversions == []


async def test_a_satellite_format_is_converted_by_ha_from_our_wav(
    hass: HomeAssistant, voice: Voice, conversions: list[tuple[str | None, str | None]]
) -> None:
    options = {
        tts.ATTR_PREFERRED_FORMAT: "wav",
        tts.ATTR_PREFERRED_SAMPLE_RATE: 16000,  # HA 2026.2 converts whenever a rate is named
        tts.ATTR_PREFERRED_SAMPLE_CHANNELS: 1,
    }
    stream = tts.async_create_stream(hass, voice.tts.entity_id, "en_US", options)
    stream.async_set_message("Good morning.")
    data = await read_all(stream.async_stream_result())

    assert conversions == [("wav", "wav")]  # the real ffmpeg, from PyPI, ran
    assert int.from_bytes(data[24:28], "little") == 16000
    assert len(data) > 16000  # half a second of speech at 16 kHz


@pytest.mark.parametrize("reply", [SHORT, LONG], ids=["short", "long"])
async def test_the_emotion_tag_is_never_spoken_by_our_voice(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice, reply: str
) -> None:
    llm_server.script(Reply.text(reply, chunk_size=7))
    flight = start_text_run(hass, voice.pipeline, "Tea?", timeout=TIMEOUT)
    assert await read_all(flight.audio())
    await flight.done()

    spoken = " ".join(proxy.texts)
    assert "happy" not in spoken.lower()
    assert spoken.startswith("OK." if reply == SHORT else "Sure.")


@pytest.mark.parametrize("reply", [SHORT, LONG], ids=["short", "long"])
async def test_the_emotion_tag_is_never_spoken_by_has_own_voice(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    voice: Voice,
    reply: str,
) -> None:
    theirs = await setup_ha_voice(hass, proxy.host, proxy.port)
    pipeline = await create_pipeline(hass, "HA's voice", voice.agent, theirs)
    llm_server.script(Reply.text(reply, chunk_size=7))
    flight = start_text_run(hass, pipeline, "Tea?", timeout=TIMEOUT)
    assert await read_all(flight.audio())
    await flight.done()

    assert proxy.texts
    assert "happy" not in "".join(proxy.texts).lower()


async def test_a_text_from_outside_any_turn_is_cleaned_with_the_default_profiles_tags(
    hass: HomeAssistant, proxy: WyomingProxy, voice: Voice
) -> None:
    stream = tts.async_create_stream(
        hass, voice.tts.entity_id, "en_US", {"preferred_format": "wav"}
    )
    stream.async_set_message("Dinner is **ready** [happy]. Come to the [kitchen] now!")
    assert await read_all(stream.async_stream_result())
    assert proxy.texts == ["Dinner is ready.", "Come to the kitchen now!"]


async def test_emulated_ha_without_the_run_table_loses_only_the_head_start(
    hass: HomeAssistant,
    *,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    voice: Voice,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A newer HA that keeps its runs elsewhere: each turn answers in full, in our voice,
    which starts only when HA opens its stream; one warning and one issue say so."""
    emulate_runs_kept_elsewhere(hass, monkeypatch)
    for _ in range(2):
        voice.journal.clear()
        proxy.audio.clear()
        llm_server.script(Reply.text(LONG, chunk_size=9))
        flight = start_text_run(hass, voice.pipeline, "Tea?", timeout=TIMEOUT)
        data = await read_all(flight.audio())
        await flight.done()

        assert voice.journal[0] == STREAM_OPENED  # piper was asked only once HA opened it
        assert data[44:] == b"".join(proxy.audio)
        assert voice.runtime.engine.speech.running_ahead == 0

    issue = ir.async_get(hass).async_get_issue(DOMAIN, ISSUE_COMPAT_RUNS)
    assert issue is not None
    assert issue.translation_placeholders == {"version": HA_VERSION}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "is off" in r.message]
    assert len(warnings) == 1  # once per HA start, not per turn
