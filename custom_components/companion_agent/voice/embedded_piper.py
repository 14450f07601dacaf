"""Embedded Piper: where its voices live, and piper-tts installed when someone picks it.

piper-tts is not in manifest.json: most installs speak through a Wyoming server, and its
wheels (onnxruntime) do not exist for every system (none for HA OS, which is musl-based).
HA's own requirement installer fetches it when a voice is set to "embedded", and again at
setup if it went missing (a new container image, a Python upgrade).
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.requirements import RequirementsNotFound, async_process_requirements

from ..const import DOMAIN, PIPER_REQUIREMENT, STORAGE_FOLDER, VOICES_FOLDER
from ..engine.errors import SpeechEngineMissingError
from ..engine.speech import VoiceFile, check_piper, list_voice_files


def voices_folder(hass: HomeAssistant) -> Path:
    """Return the folder the embedded voices are read from."""
    return Path(hass.config.path(STORAGE_FOLDER, VOICES_FOLDER))


async def async_require_piper(hass: HomeAssistant) -> None:
    """Install piper-tts through HA if it is missing and import it, or raise why not."""
    try:
        await async_process_requirements(hass, DOMAIN, [PIPER_REQUIREMENT])
    except RequirementsNotFound as err:
        raise SpeechEngineMissingError(f"{PIPER_REQUIREMENT} did not install: {err}") from err
    await hass.async_add_executor_job(check_piper)


async def async_list_voice_files(hass: HomeAssistant) -> tuple[VoiceFile, ...]:
    """Create the voices folder if it is missing and list the voices in it."""
    folder = voices_folder(hass)

    def _list() -> tuple[VoiceFile, ...]:
        """Create and list the folder (blocking); a folder that cannot be made has none."""
        with suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
        return list_voice_files(folder)

    return await hass.async_add_executor_job(_list)
