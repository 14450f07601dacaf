"""Who is speaking at the companion's own satellite: the real wyoming-satellite, Whisper, Piper.

The person (Piper's voice, enrolled from WAV files) wakes the satellite and asks; the
satellite's pipeline transcribes with our STT, or with Home Assistant's own Wyoming STT on
the same Whisper, which hands the companion no audio: then the satellite's run matches the
voice from the audio it kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from homeassistant.components.assist_pipeline.pipeline import (
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.common import add_person, agents_by_title, call, settled
from tests.ha.common.satellites import setup_wyoming, wait_state, wyoming_entity
from tests.support.chat_requests import last_user_message
from tests.support.festival import write_wav
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite import SatellitePeer
from tests.support.whisper import WhisperPeer, spoken

ENROL = (
    "Please turn on the lights in the kitchen.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to water the plants on Sunday evening.",
)
SECRET = "Ada keeps the spare key under the blue flowerpot"
QUESTION = "Where did I say the spare key is kept?"


async def enrol_ada(hass: HomeAssistant, piper: PiperPeer, folder: Path) -> str:
    """Enrol Ada's voice (Piper's) from three recordings in ``folder``; return her person."""
    _ada_id, ada = await add_person(hass, "Ada")
    hass.config.allowlist_external_dirs.add(str(folder))
    files = [
        str(write_wav(folder / f"ada-{n}.wav", await spoken(piper, text)))
        for n, text in enumerate(ENROL)
    ]
    await call(hass, "enroll_voice", {"person": ada, "audio": files})
    return ada


async def ask_at_the_satellite(
    hass: HomeAssistant,
    satellite_id: str,
    satellite: SatellitePeer,
    piper: PiperPeer,
    llm_server: LLMServer,
) -> str:
    """Have Ada wake the satellite and ask; return the chat request's last user message."""
    llm_server.script(Reply.text("Under the blue flowerpot."))
    satellite.say(await spoken(piper, QUESTION))
    satellite.wake()
    await wait_state(hass, satellite_id, "listening")
    await wait_state(hass, satellite_id, "idle")
    return last_user_message(llm_server)


@pytest.mark.parametrize("stt", ["ours", "home assistant's"])
async def test_the_satellite_knows_who_asks_with_either_speech_to_text(
    hass: HomeAssistant,
    *,
    on_wyoming_satellite: tuple[MockConfigEntry, str],
    piper: PiperPeer,
    whisper: WhisperPeer,
    satellite: SatellitePeer,
    llm_server: LLMServer,
    tmp_path: Path,
    stt: str,
) -> None:
    """Ada's memory reaches her turn at the satellite, whoever transcribes it."""
    entry, satellite_id = on_wyoming_satellite
    if stt != "ours":
        theirs = wyoming_entity(hass, await setup_wyoming(hass, whisper.host, whisper.port), "stt")
        await async_update_pipeline(hass, async_get_pipeline(hass), stt_engine=theirs)
        assert async_get_pipeline(hass).stt_engine == theirs  # the companion hears no audio
    folder = tmp_path / "recordings"
    folder.mkdir()
    ada = await enrol_ada(hass, piper, folder)
    agent = next(iter(agents_by_title(hass, entry).values()))
    await call(hass, "remember", {"persona": agent, "person": ada, "text": SECRET, "topic": "key"})
    await settled(entry)

    sent = await ask_at_the_satellite(hass, satellite_id, satellite, piper, llm_server)

    assert SECRET in sent
    assert "The person speaking is Ada" in sent
