"""The companion's satellite with the real wyoming-satellite 1.0.0, Piper, Whisper and HA.

The satellite wakes on its own wake word (a program that detects it on cue), hears the
person through a microphone that plays Piper's speech at real time, and plays the answer
into a file. Whisper transcribes what the person said, and here also what the satellite
played: few tests, since each transcription takes about as long as the speech.
"""

from __future__ import annotations

import asyncio

import pytest
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from wyoming.audio import AudioChunk, AudioChunkConverter

from custom_components.companion_agent.engine.speech import WyomingSTT
from tests.ha.common import SetupCompanion, assistant_text, async_load, persona, stored_turns
from tests.ha.common.house import EXPOSED, UNLOCK, audit, state
from tests.ha.common.satellites import setup_satellite_companion, wait_state
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite import SPEAKER_RATE, SatellitePeer
from tests.support.whisper import (
    LEAD_SILENCE,
    RATE,
    TAIL_SILENCE,
    WhisperPeer,
    heard_as,
    pieces,
    spoken,
    words,
)

QUESTION = "What will the weather be like today?"
ANSWER = "It will be sunny and warm all day."


def at_16k(pcm: bytes) -> bytes:
    """Return the satellite speaker's audio (22.05 kHz, 16-bit mono) at 16 kHz for whisper."""
    chunk = AudioChunk(rate=SPEAKER_RATE, width=2, channels=1, audio=pcm)
    return AudioChunkConverter(rate=RATE, width=2, channels=1).convert(chunk).audio


async def test_wake_word_to_answer_round_trip_on_wyoming_satellite(
    hass: HomeAssistant,
    *,
    on_wyoming_satellite: tuple[MockConfigEntry, str],
    llm_server: LLMServer,
    piper: PiperPeer,
    whisper: WhisperPeer,
    satellite: SatellitePeer,
) -> None:
    """Wake word, question, the answer played on the satellite's speaker, the turn stored."""
    entry, satellite_id = on_wyoming_satellite
    llm_server.script(Reply.text(ANSWER))
    satellite.say(await spoken(piper, QUESTION))
    satellite.wake()

    await wait_state(hass, satellite_id, "listening")
    await wait_state(hass, satellite_id, "responding")
    await wait_state(hass, satellite_id, "idle")

    messages = llm_server.requests[0]["messages"]
    assert isinstance(messages, list)
    assert words(str(messages[-1]["content"]))[-len(words(QUESTION)) :] == words(QUESTION)
    played = satellite.heard()
    assert len(played) > SPEAKER_RATE * 2  # more than a second of answer
    heard = await WyomingSTT(whisper.host, whisper.port).transcribe(
        pieces(bytes(RATE) + at_16k(played) + bytes(RATE * 2))
    )
    assert heard_as(heard.text, ANSWER), heard.text
    await entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert assistant_text(turn) == ANSWER
    assert await hass.config_entries.async_unload(entry.entry_id)
    await asyncio.sleep(0)


LONG_ANSWER = (
    "The weather stays fine all week. "
    "On Monday it will be sunny and warm in the whole valley. "
    "On Tuesday a light breeze comes up in the afternoon. "
    "On Wednesday the clouds return, but it stays dry. "
    "Thursday and Friday will be the warmest days of the week."
)
STOP = "Please stop talking now."
STOPPED = "Okay, I will stop."


def sentences_of(text: str) -> list[str]:
    """Return the sentences of ``text``, each with its full stop."""
    return [f"{part.strip()}." for part in text.split(".") if part.strip()]


async def test_barge_in_on_wyoming_satellite_keeps_only_what_was_played(
    hass: HomeAssistant,
    *,
    on_wyoming_satellite: tuple[MockConfigEntry, str],
    llm_server: LLMServer,
    piper: PiperPeer,
    satellite: SatellitePeer,
) -> None:
    """Waking the satellite over the answer stops it; the words said over it are answered.

    HA's own Wyoming satellite drops the audio of a run started while another runs (the
    cancelled run's end clears the new run's flag): here the words said over the answer reach
    whisper. wyoming-satellite sends only what its microphone hears after the wake word, so
    the person speaks once the satellite listens (a loaded machine can take longer than the
    speech's lead silence to detect it), and several words: Piper says a one-word "Stop."
    differently each time, and Whisper has heard one of them as "Start."
    """
    entry, satellite_id = on_wyoming_satellite
    # The model writes slowly: the answer's turn (and its pipeline run) still runs when the
    # person speaks over it, so the run the barge-in cancels ends after the new one began.
    llm_server.script(Reply.text(LONG_ANSWER, chunk_size=10, delay=0.3), Reply.text(STOPPED))
    question, stop = await spoken(piper, QUESTION), await spoken(piper, STOP)
    satellite.say(question)
    satellite.wake()
    await wait_state(hass, satellite_id, "responding")
    sent_at_barge_in = await satellite.wait_heard(3.0)
    satellite.wake()
    await wait_state(hass, satellite_id, "listening")
    satellite.say(stop)
    await wait_state(hass, satellite_id, "responding")
    await wait_state(hass, satellite_id, "idle")

    await entry.runtime_data.engine.flush()
    first, second = sorted(stored_turns(hass), key=lambda turn: str(turn["time"]))
    assert first["outcome"] == "interrupted"
    kept = assistant_text(first)
    everything = sentences_of(LONG_ANSWER)
    count = len(sentences_of(kept))
    assert kept == " ".join(everything[:count])  # whole sentences
    # Each sentence's real length in this voice: the kept ones began by the barge-in (a
    # sentence counts once it could have begun), the next had not begun long before it.
    starts = [0.0]
    for sentence in everything:
        audio = len(await spoken(piper, sentence)) / (RATE * 2)
        starts.append(starts[-1] + audio - LEAD_SILENCE - TAIL_SILENCE)
    assert 1 <= count < len(everything)
    assert starts[count - 1] <= sent_at_barge_in + 0.5
    assert starts[count] >= sent_at_barge_in - 1.5
    assert heard_as(str(second["user"]), STOP), second["user"]
    assert second["outcome"] == "complete"
    assert assistant_text(second) == STOPPED
    assert (
        satellite.heard_seconds() < sent_at_barge_in + 1.0 + 3.0
    )  # the rest of the long answer never went
    assert await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.usefixtures("demo_devices")
async def test_a_held_unlock_is_confirmed_without_the_wake_word_on_wyoming_satellite(
    hass: HomeAssistant,
    *,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    piper: PiperPeer,
    whisper: WhisperPeer,
    satellite: SatellitePeer,
) -> None:
    """Wake word, "unlock the front door": the unlock is held and the question played; the
    satellite goes on listening with no wake word, the person's "yes" unlocks the door once,
    and the reply to that asks nothing: the satellite waits for its wake word again.

    wyoming-satellite stops streaming when it is told ``transcript`` (or ``run-satellite``):
    its log shows one wake word, and one return to waiting for it after the connect's.
    """
    assert await async_setup_component(hass, "conversation", {})
    await async_load_demo(hass)
    entry, satellite_id = await setup_satellite_companion(
        hass,
        setup_companion,
        piper,
        (whisper.host, whisper.port, whisper.model),
        (satellite.host, satellite.port),
        agent=persona(llm_apis=[llm.LLM_API_ASSIST]),
    )
    await wait_state(hass, satellite_id, "idle")
    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("Shall I unlock the front door?"),
        Reply.text("Done, the front door is unlocked."),
    )
    unlock, yes = await spoken(piper, "Unlock the front door."), await spoken(piper, "Yes, please.")
    satellite.say(unlock)
    satellite.wake()
    await wait_state(hass, satellite_id, "responding")
    await wait_state(hass, satellite_id, "listening")  # the question played: listening again
    assert state(hass, "lock.front_door") == "locked"
    satellite.say(yes)
    await wait_state(hass, satellite_id, "responding", within=60.0)
    await wait_state(hass, satellite_id, "idle")

    assert state(hass, "lock.front_door") == "unlocked"
    await entry.runtime_data.engine.flush()
    runs = [r for r in audit(hass) if r["tool"] == "HassTurnOff" and r["outcome"] == "success"]
    assert len(runs) == 1
    assert runs[0]["decision"] == "approved"
    held, answered = sorted(stored_turns(hass), key=lambda turn: str(turn["time"]))
    assert assistant_text(held) == "Shall I unlock the front door?"
    assert heard_as(str(answered["user"]), "Yes, please."), answered["user"]
    assert assistant_text(answered) == "Done, the front door is unlocked."
    assert len(llm_server.requests) == 3  # the call, the question, the reply to the yes
    await asyncio.sleep(1.0)  # nothing listens again: the last reply asked nothing
    assert hass.states.get(satellite_id).state == "idle"  # type: ignore[union-attr]
    log = (await asyncio.to_thread(satellite.log.read_text)).splitlines()
    assert sum("Streaming audio" in line for line in log) == 1  # one wake word
    assert sum("Waiting for wake word" in line for line in log) == 2  # connect, the end
    assert await hass.config_entries.async_unload(entry.entry_id)
    await asyncio.sleep(0)


async def async_load_demo(hass: HomeAssistant) -> None:
    """Set up HA's demo lock (and light and cover) and expose them to Assist."""
    await async_load(hass, MockConfigEntry(domain="demo"))
    for exposed in EXPOSED:
        async_expose_entity(hass, conversation.DOMAIN, exposed, True)
