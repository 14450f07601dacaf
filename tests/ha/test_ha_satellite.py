"""HA's own Wyoming satellite with our agent: real HA, Piper, Whisper, and a Wyoming satellite.

The satellite is ``RealTimeSatellite`` (the real wyoming-satellite on PyPI answers no ping,
so HA 2026.2.3 drops it while it waits for its wake word): it asks through its microphone
at real time, Whisper hears it, our agent answers from the scripted model, and HA sends the
answer's audio to the satellite's speaker, converted by ffmpeg (HA's satellite names a
sample rate). Speaking over the answer is a second ``ask`` while it still streams: HA
cancels the running pipeline, and with it our agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN, ISSUE_COMPAT_RUNS
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.runtime import CompanionRuntime
from tests.ha.common import (
    SetupCompanion,
    assistant_text,
    entity_id,
    persona,
    speech_to_text,
    stored_turns,
    wyoming_voice,
)
from tests.ha.common.pipelines import create_pipeline, emulate_runs_kept_elsewhere, keep_turns
from tests.ha.common.satellites import setup_ha_satellite, setup_ha_voice, wait_until
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.realtime_satellite import RealTimeSatellite
from tests.support.whisper import WhisperPeer, spoken
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 30.0
QUESTION = "What will the weather be like today?"
FIRST = "The weather today will be sunny and warm from morning until late at night."
SECOND = "Take a hat."
THIRD = "It may rain on Sunday."
FOURTH = "The wind stays calm."
SILENT = bytes(16000)  # half a second of nothing: speaking over the answer


@dataclass
class Home:
    """Our entry, HA's satellite on a pipeline, and the turns our agent started."""

    entry: MockConfigEntry
    satellite: RealTimeSatellite
    satellite_id: str
    turns: list[Turn] = field(default_factory=list)


@pytest.fixture
async def realtime_satellite(socket_enabled: None) -> AsyncIterator[RealTimeSatellite]:
    """Run the scripted Wyoming satellite on 127.0.0.1."""
    async with RealTimeSatellite() as satellite:
        yield satellite


type SetUpHome = Callable[..., Awaitable[Home]]


@pytest.fixture
def set_up_home(
    hass: HomeAssistant,
    *,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    whisper: WhisperPeer,
    realtime_satellite: RealTimeSatellite,
    monkeypatch: pytest.MonkeyPatch,
) -> SetUpHome:
    """Return what sets up our agent, voice and Whisper, and HA's satellite on them."""

    async def set_up(*, our_voice: bool = True) -> Home:
        """Set up the home: our voice speaks, or (``our_voice`` False) HA's on the same Piper."""
        entry = await setup_companion(
            persona(),
            wyoming_voice(proxy.host, proxy.port),
            speech_to_text(whisper.host, whisper.port, whisper.model, languages=("en",)),
        )
        tts = (
            entity_id(hass, entry, "tts")
            if our_voice
            else await setup_ha_voice(hass, proxy.host, proxy.port)
        )
        agent, stt = entity_id(hass, entry, "conversation"), entity_id(hass, entry, "stt")
        pipeline = await create_pipeline(hass, "Hall", agent, tts, stt)
        satellite_id = await setup_ha_satellite(hass, realtime_satellite, pipeline)
        home = Home(entry=entry, satellite=realtime_satellite, satellite_id=satellite_id)
        runtime: CompanionRuntime = entry.runtime_data
        keep_turns(runtime.engine, home.turns)
        return home

    return set_up


async def test_an_answer_plays_on_has_satellite_in_our_voice_started_ahead_of_ha(
    hass: HomeAssistant,
    *,
    llm_server: LLMServer,
    piper: PiperPeer,
    proxy: WyomingProxy,
    realtime_satellite: RealTimeSatellite,
    set_up_home: SetUpHome,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A satellite's pipeline is found through public APIs: Assist's private run table unused.
    home = await set_up_home()
    emulate_runs_kept_elsewhere(hass, monkeypatch)
    released = asyncio.Event()
    llm_server.script(Reply.held(f"{FIRST} Take", f" a hat. {THIRD} {FOURTH}", until=released))
    await realtime_satellite.ask(await spoken(piper, QUESTION))

    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # ahead of HA: under 60 characters
    assert proxy.texts == [FIRST]
    released.set()
    answer = await realtime_satellite.wait_answer(TIMEOUT)

    assert realtime_satellite.transcripts == [QUESTION]
    assert proxy.texts == [FIRST, SECOND, THIRD, FOURTH]  # one request per sentence
    assert (answer.rate, answer.width, answer.channels) == (22050, 2, 1)
    made = sum(len(part) for part in proxy.audio)
    assert abs(len(answer.audio) - made) < made // 50  # all of it, through HA's ffmpeg
    await home.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert ir.async_get(hass).async_get_issue(DOMAIN, ISSUE_COMPAT_RUNS) is None


@pytest.mark.parametrize("our_voice", [True, False], ids=["our voice", "has own voice"])
async def test_speaking_over_the_answer_on_has_satellite_keeps_only_what_was_heard(
    hass: HomeAssistant,
    *,
    llm_server: LLMServer,
    piper: PiperPeer,
    realtime_satellite: RealTimeSatellite,
    set_up_home: SetUpHome,
    our_voice: bool,
) -> None:
    home = await set_up_home(our_voice=our_voice)
    released = asyncio.Event()
    llm_server.script(Reply.held(f"{FIRST} {SECOND} {THIRD} And", " more.", until=released))
    await realtime_satellite.ask(await spoken(piper, QUESTION))
    await wait_until(lambda: bool(home.turns) and len(home.turns[0].spoken) == 3)
    (turn,) = home.turns
    speech = home.entry.runtime_data.engine.speech.get(turn.trace_id)
    assert speech is not None
    if our_voice:
        await wait_until(lambda: bool(speech.timeline.starts))  # the first sentence's audio left
    else:
        assert speech.voice is None  # not ours: HA's stream opened with the 60th character

    await realtime_satellite.ask(SILENT)  # the person speaks over it: HA cancels the run
    result = await asyncio.wait_for(turn.result, TIMEOUT)
    released.set()

    assert result.outcome == "interrupted"
    assert THIRD in result.shown  # all three were written and shown
    await home.entry.runtime_data.engine.flush()
    (stored,) = stored_turns(hass)
    assert stored["outcome"] == "interrupted"
    assert assistant_text(stored) == FIRST  # only what could have been heard by then
    if our_voice:
        await realtime_satellite.wait_answer()  # HA sends what it had to the end (audio-stop)
