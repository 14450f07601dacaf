"""``companion_agent.start_chat`` to real media players: announce, played, the length fallback."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.companion_agent.engine.speech.audio_length import spoken_seconds
from custom_components.companion_agent.voice.playback import FALLBACK_MARGIN
from tests.ha.common.speakers import (
    ATTIC,
    LOUNGE,
    TIMEOUT,
    Companion,
    Devices,
    SpokeEvents,
    start_chat,
)
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer


async def test_a_media_player_announces_the_stream_and_played_comes_once_it_goes_idle(
    hass: HomeAssistant, llm_server: LLMServer, devices: Devices, companion: Companion
) -> None:
    """play_media with announce and the stream URL; playing → idle fires the event once."""
    entry = companion.entry
    lounge = devices[LOUNGE]
    llm_server.script(Reply.text("Dinner is ready. Come to the table."))
    events = SpokeEvents(hass)

    await start_chat(hass, targets=[LOUNGE])
    await asyncio.wait_for(lounge.heard.done.wait(), TIMEOUT)
    await hass.async_block_till_done()

    assert lounge.heard.extra[0]["announce"] is True
    assert lounge.heard.urls[0].startswith("http://homeassistant.test:8123/api/tts_proxy/")
    assert [e.data["text"] for e in events] == ["Dinner is ready. Come to the table."]
    assert dict(entry.runtime_data.playback.watching) == {}
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=60))
    await hass.async_block_till_done()
    assert len(events) == 1  # the fallback never fires after a real end


async def test_a_media_player_that_reports_nothing_is_played_after_the_estimated_length(
    hass: HomeAssistant, llm_server: LLMServer, devices: Devices, companion: Companion
) -> None:
    """No state change: played once the spoken text's length plus the margin has passed."""
    entry = companion.entry
    text = "The post has arrived."
    llm_server.script(Reply.text(text))
    events = SpokeEvents(hass)

    await start_chat(hass, targets=[ATTIC])
    await asyncio.wait_for(devices[ATTIC].heard.done.wait(), TIMEOUT)
    await hass.async_block_till_done()
    assert events == []
    assert ATTIC in entry.runtime_data.playback.watching
    length = spoken_seconds(text) + FALLBACK_MARGIN
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=length + 1))
    await hass.async_block_till_done()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=length + 60))
    await hass.async_block_till_done()

    assert [e.data["text"] for e in events] == [text]
    assert dict(entry.runtime_data.playback.watching) == {}


async def test_a_reported_exact_length_replaces_the_estimate(
    hass: HomeAssistant, llm_server: LLMServer, devices: Devices, companion: Companion
) -> None:
    """A TTS that knows the audio lasts 120 s: not played at the estimate, played after 120 s."""
    entry = companion.entry
    llm_server.script(Reply.text("A short line."))
    events = SpokeEvents(hass)

    (chat,) = await start_chat(hass, targets=[ATTIC])
    entry.runtime_data.playback.async_report_duration(str(chat["trace_id"]), 120.0)
    start = dt_util.utcnow()
    async_fire_time_changed(hass, start + timedelta(seconds=spoken_seconds("A short line.") + 10))
    await hass.async_block_till_done()
    assert events == []
    async_fire_time_changed(hass, start + timedelta(seconds=120 + FALLBACK_MARGIN + 1))
    await hass.async_block_till_done()

    assert [e.data["text"] for e in events] == ["A short line."]
