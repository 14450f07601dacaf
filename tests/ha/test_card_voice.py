"""Subtitles follow our voice: an Assist pipeline, our agent and TTS entity, real Piper.

The card's sentences come when their audio begins to play, not when they are written: the
model writes all three at once, the card receives them one audio length apart.
"""

from __future__ import annotations

import asyncio

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from tests.ha.common.audio import FIRST, SECOND, THIRD, pcm
from tests.ha.common.card import Card
from tests.ha.common.pipelines import Voice, start_text_run
from tests.ha.common.speakers import LOUNGE, TIMEOUT, Companion, Devices, start_chat
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.wyoming_proxy import WyomingProxy

BYTES_PER_SECOND = 22050 * 2  # en_US-joe-medium: 22.05 kHz, 16-bit mono


async def test_the_card_hears_each_sentence_as_its_audio_plays(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    voice: Voice,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """Three sentences written at once reach the card spread over the audio, as ``audio``."""
    card = await Card.open(hass, hass_ws_client, voice.agent)
    llm_server.script(Reply.text(f"{FIRST} {SECOND} {THIRD}"))
    arrived: list[tuple[str, str, float]] = []

    async def listen() -> None:
        """Note each sentence the card receives, and when."""
        while len(arrived) < 3:
            event = await card.until("sentence")
            arrived.append((event["text"], event["timing"], hass.loop.time()))

    listening = hass.async_create_task(listen())
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    audio = pcm([chunk async for chunk in flight.audio()])
    await flight.done()
    await asyncio.wait_for(listening, 15)
    assert [(text, timing) for text, timing, _at in arrived] == [
        (FIRST, "audio"),
        (SECOND, "audio"),
        (THIRD, "audio"),
    ]
    seconds = len(audio) / BYTES_PER_SECOND
    spread = arrived[2][2] - arrived[0][2]
    # Written, all three would come within a few milliseconds; heard, the third comes once
    # the first two have played, well over half the audio (the third is the shortest).
    assert spread > seconds * 0.5, (spread, seconds)
    await card.until("turn_ended")


async def test_speech_the_home_begins_reaches_every_card_as_heard(
    hass: HomeAssistant,
    llm_server: LLMServer,
    devices: Devices,  # before the companion: it sets up Assist
    companion: Companion,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """start_chat on a media player, in our voice: the card hears it, in the voice's time."""
    card = await Card.open(hass, hass_ws_client, companion.agent)
    llm_server.script(Reply.text("Dinner is ready. Come to the table."))
    await start_chat(hass, targets=[LOUNGE])
    await asyncio.wait_for(devices[LOUNGE].heard.done.wait(), TIMEOUT)
    await card.until("turn_ended")
    spoken = [(e["text"], e["timing"]) for e in card.of("sentence")]
    assert spoken == [("Dinner is ready.", "audio"), ("Come to the table.", "audio")]
