"""Each sentence reaches Piper once, on every path HA speaks a turn, through a real HA.

Piper sits behind the recording proxy; what it is asked is counted per path. A reply of four
sentences must be four requests, whoever reads its audio and however often: the Assist
dialog's run (the browser fetching the stream twice, as a media element may), the same run
when HA's TTS task does not carry the agent's mark, the companion's own satellite (its run
plays the turn's audio, and HA's stream for the run reads it too), and ``start_chat`` on a
media player. HA's own satellite is counted in ``test_ha_satellite.py`` (four sentences).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from homeassistant.core import HomeAssistant

from tests.ha.common import SetupCompanion
from tests.ha.common.pipelines import TextRun, Voice, start_text_run
from tests.ha.common.satellites import setup_satellite_companion, wait_state
from tests.ha.common.speakers import LOUNGE, Companion, Devices, start_chat
from tests.support.asr_server import ScriptedAsrServer
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite_script import ScriptedSatellite
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 20.0
FOUR = (
    "The garden needs water today.",
    "The roses want cutting soon.",
    "The hedge by the gate has grown tall.",
    "The apples will be ripe next week.",
)


async def fetched_twice(flight: TextRun) -> tuple[bytes, bytes]:
    """Read the run's TTS stream as a browser may: once, and again while the first reads."""
    first = flight.audio()
    head = await anext(first)
    second = b"".join([part async for part in flight.audio()])
    return head + b"".join([part async for part in first]), second


async def dialog_reply(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> tuple[bytes, bytes]:
    """Run the dialog's text run of a four-sentence reply, its first sentence made ahead.

    Return the run's audio as the browser read it, twice, once Piper has finished.
    """
    released = asyncio.Event()
    llm_server.script(Reply.held(f"{FOUR[0]} The", " " + " ".join(FOUR[1:])[4:], until=released))
    flight = start_text_run(hass, voice.pipeline, "The garden?", timeout=TIMEOUT, audio_output=None)
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # the head start, before HA opens
    released.set()
    one, two = await fetched_twice(flight)
    await flight.done()
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)
    return one, two


async def test_the_dialog_path_asks_piper_once_per_sentence(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    """The dialog's run, its stream read twice: four sentences are four requests to Piper."""
    one, two = await dialog_reply(hass, llm_server, proxy, voice)

    assert proxy.texts == list(FOUR)  # four requests, one per sentence
    assert one == two
    assert len(one) > 20_000  # seconds of MP3, not an empty stream
    assert voice.runtime.engine.speech.running_ahead == 0


@contextmanager
def unmarked(_trace_id: str) -> Iterator[None]:
    """Mark nothing: HA's TTS task then runs without the agent's turn in its context."""
    yield


async def test_emulated_ha_whose_tts_task_lacks_the_agents_mark_still_asks_piper_once(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    voice: Voice,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An HA that starts its TTS stream in a task of its own finds the turn by its text.

    2026.2.3 makes the TTS audio in an eager task created in the ChatLog's delta listener
    (``tts.SpeechManager.async_cache_message_stream_in_memory``), so it inherits the agent's
    context; HA's dev branch moves the pipeline into processors (core PR 182248). The
    stream is then found by what HA hands it first: the reply so far, as the agent wrote it.
    """
    monkeypatch.setattr("custom_components.companion_agent.conversation.speaking_turn", unmarked)
    one, two = await dialog_reply(hass, llm_server, proxy, voice)

    assert proxy.texts == list(FOUR)  # four requests, one per sentence
    assert one == two
    assert len(one) > 20_000  # seconds of MP3, not an empty stream
    assert voice.runtime.engine.speech.running_ahead == 0


async def test_the_media_player_path_asks_piper_once_per_sentence(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: Devices,
    companion: Companion,
) -> None:
    lounge = devices[LOUNGE]
    llm_server.script(Reply.text(" ".join(FOUR), chunk_size=9))

    await start_chat(hass, targets=[LOUNGE])
    await asyncio.wait_for(lounge.heard.done.wait(), TIMEOUT)
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)

    assert proxy.texts == list(FOUR)
    assert len(lounge.heard.audio) > 100_000  # the whole answer, as WAV


async def test_the_companions_satellite_path_asks_piper_once_per_sentence(
    hass: HomeAssistant,
    *,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    piper: PiperPeer,
    proxy: WyomingProxy,
    scripted_asr: ScriptedAsrServer,
    scripted_satellite: ScriptedSatellite,
) -> None:
    asr, satellite = scripted_asr, scripted_satellite
    entry, entity = await setup_satellite_companion(
        hass,
        setup_companion,
        replace(piper, host=proxy.host, port=proxy.port),  # our voice speaks through the proxy
        (asr.host, asr.port, "tiny"),
        (satellite.host, satellite.port),
    )
    await satellite.wait_connected()
    await wait_state(hass, entity, "idle")
    released = asyncio.Event()
    llm_server.script(Reply.held(f"{FOUR[0]} The", " " + " ".join(FOUR[1:])[4:], until=released))

    await satellite.ask(bytes(3200))
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # the run plays it before HA opens
    released.set()
    await satellite.wait_event("audio-stop")
    await wait_state(hass, entity, "idle")
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)

    assert proxy.texts == list(FOUR)
    assert await hass.config_entries.async_unload(entry.entry_id)
