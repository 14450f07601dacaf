"""MP3 made in this process: lameenc, installed through HA once a voice is set up.

lameenc is not in manifest.json: it has wheels for glibc (HA Core, HA Supervised) but none
for musl (HA OS, the container) and no source release, and an integration whose manifest
requirement cannot install does not load at all. HA's own requirement installer fetches
it when a voice entity is added; where it cannot, the voice gives WAV when MP3 is asked
for, and HA converts it with ffmpeg as it does for any engine.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.requirements import RequirementsNotFound, async_process_requirements

from ..const import DOMAIN, LAMEENC_REQUIREMENT, LOGGER
from ..engine.speech import mp3_available


async def async_mp3_ready(hass: HomeAssistant) -> bool:
    """Install lameenc through HA if it is missing; say whether MP3 can be made here."""
    try:
        await async_process_requirements(hass, DOMAIN, [LAMEENC_REQUIREMENT])
    except RequirementsNotFound as err:
        LOGGER.info("No MP3 encoder (%s): HA converts the voices' WAV to MP3 itself", err)
        return False
    return await hass.async_add_executor_job(mp3_available)
