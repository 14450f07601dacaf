"""The companion's satellite with the real wyoming-satellite 1.0.0, Piper, Whisper and HA.

The satellite wakes on its own wake word (a program that detects it on cue), hears the
person through a microphone that plays Piper's speech at real time, and plays the answer
into a file. Whisper transcribes what the person said, and here also what the satellite
played: few tests, since each transcription takes about as long as the speech.
"""

from __future__ import annotations

import asyncio

from homeassistant.core import HomeAssistant
from wyoming.audio import AudioChunk, AudioChunkConverter

from custom_components.companion_agent.engine.speech import WyomingSTT
from tests.ha.satellitekit import companion_entry, said, setup_companion, stored_turns, wait_state
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite import SPEAKER_RATE, SatellitePeer
from tests.support.whisper import RATE, WhisperPeer, pieces, spoken, words

QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris."


def at_16k(pcm: bytes) -> bytes:
    """Return the satellite speaker's audio (22.05 kHz, 16-bit mono) at 16 kHz for whisper."""
    chunk = AudioChunk(rate=SPEAKER_RATE, width=2, channels=1, audio=pcm)
    return AudioChunkConverter(rate=RATE, width=2, channels=1).convert(chunk).audio


async def test_wake_word_to_answer_round_trip_on_wyoming_satellite(
    hass: HomeAssistant,
    llm_server: LLMServer,
    piper: PiperPeer,
    whisper: WhisperPeer,
    satellite: SatellitePeer,
) -> None:
    """Wake word, question, the answer played on the satellite's speaker, the turn stored."""
    entry = companion_entry(
        llm_server,
        piper,
        (whisper.host, whisper.port, whisper.model),
        (satellite.host, satellite.port),
    )
    satellite_id = await setup_companion(hass, entry)
    await wait_state(hass, satellite_id, "idle")
    llm_server.script(Reply.text(ANSWER))
    satellite.say(await spoken(piper, QUESTION))
    satellite.wake()

    await wait_state(hass, satellite_id, "listening")
    await wait_state(hass, satellite_id, "responding")
    await wait_state(hass, satellite_id, "idle")

    messages = llm_server.requests[0]["messages"]
    assert isinstance(messages, list)
    assert words(str(messages[-1]["content"]))[-6:] == words(QUESTION)
    played = satellite.heard()
    assert len(played) > SPEAKER_RATE * 2  # more than a second of answer
    heard = await WyomingSTT(whisper.host, whisper.port).transcribe(
        pieces(bytes(RATE) + at_16k(played) + bytes(RATE * 2))
    )
    assert words(heard.text) == words(ANSWER)
    await entry.runtime_data.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert said(turn) == ANSWER
    assert await hass.config_entries.async_unload(entry.entry_id)
    await asyncio.sleep(0)
