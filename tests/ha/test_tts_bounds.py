"""A hostile TTS server behind our voice, through a real HA: bounded audio, time and memory.

The server (``tests/support/hostile_wyoming.py``) runs in a process of its own, so the
resident memory measured around the stream is this process's: HA's, with our voice and
HA's TTS cache, which keeps the whole answer. The bound is 50 MB whatever the machine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from homeassistant.components import tts
from homeassistant.core import HomeAssistant

from custom_components.companion_agent.engine.speech import wyoming_tts
from tests.ha.common import SetupCompanion, tts_entity, wyoming_voice
from tests.support.hostile_wyoming import VOICE, HostileServer, Mode
from tests.support.rss import MB, RssPeak

TEXT = "Hello there."
TIMEOUT = 60.0
RSS_BOUND = 50 * MB
BYTES_A_SECOND = 22050 * 2


@pytest.fixture
def hostile(socket_enabled: None, request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    """Run the hostile server in the mode the test's parameter names."""
    mode: Mode = request.param
    with HostileServer(mode) as server:
        yield server


@pytest.mark.parametrize("hostile", ["endless-audio", "huge-chunk"], indirect=True)
async def test_a_hostile_server_leaves_ha_within_its_bounds(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    hostile: HostileServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    entity = tts_entity(
        hass, await setup_companion(wyoming_voice(hostile.host, hostile.port, VOICE))
    )
    stream = tts.async_create_stream(hass, entity.entity_id, "en_US", {"preferred_format": "wav"})
    bound = wyoming_tts.AUDIO_FLOOR + wyoming_tts.AUDIO_PER_CHAR * len(TEXT)

    async with RssPeak() as memory, asyncio.timeout(TIMEOUT):
        stream.async_set_message(TEXT)
        received = sum([len(part) async for part in stream.async_stream_result()])

    assert received <= 44 + bound * BYTES_A_SECOND  # the stream ended within the bound
    if hostile.mode == "endless-audio":
        assert received > 44 + (bound - 1) * BYTES_A_SECOND  # what came before it stays
    assert memory.growth < RSS_BOUND
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(hostile.server in warning and "skipped" in warning for warning in warnings)
