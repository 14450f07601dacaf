"""Which voice speaks first on a device: the satellite's own pipeline, else the entry's voice.

A satellite speaks proactive turns with the TTS of the Assist pipeline it uses for its
answers (its pipeline select, or the preferred pipeline when it has none or it says
*preferred*), so it sounds the same either way, in the audio format the satellite asks
for (the companion's satellite: WAV, as Piper makes it). A media player has no pipeline:
the entry's own voice speaks (piper's WAV as it is: no conversion, no ffmpeg, no delay),
else the preferred pipeline's TTS, else HA's default TTS engine.

``async_audio_seconds`` reads a stream a media player was given, to learn whether the TTS
failed (the player cannot tell) and, for WAV, the audio's exact length.
"""

from __future__ import annotations

import struct

from homeassistant.components import tts
from homeassistant.components.assist_satellite import AssistSatelliteEntity
from homeassistant.core import HomeAssistant, split_entity_id
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er

from ..compat import async_get_entity
from ..const import DOMAIN
from ..runtime import CompanionConfigEntry
from ..voice.speaking import ASSIST_PIPELINE, PipelineVoice, pipeline_voice, satellite_voice

WAV_HEADER = 44

type Voice = tuple[str, str | None, dict[str, str]]
"""A TTS engine, its language (None: the engine's own) and its options."""


def async_voice_for(hass: HomeAssistant, entry: CompanionConfigEntry, target: str) -> Voice:
    """Return the TTS engine, language and options proactive speech on ``target`` uses."""
    own = _own_voice(hass, entry)
    if split_entity_id(target)[0] == "assist_satellite":
        voice = satellite_voice(hass, target)
        if voice is not None:
            return _in_satellite_format(hass, target, _options(voice, own))
    if own is not None:
        return own, None, {tts.ATTR_PREFERRED_FORMAT: "wav"}
    if ASSIST_PIPELINE in hass.config.components:
        voice = pipeline_voice(hass, None)
        if voice is not None:
            return _options(voice, own)
    if (engine := tts.async_default_engine(hass)) is not None:
        return engine, None, {}
    raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_tts_engine")


def _options(voice: PipelineVoice, own: str | None) -> Voice:
    """Return a pipeline's voice; the entry's own voice gives WAV, whose length is exact."""
    options = dict(voice.options)
    if voice.engine == own:
        options[tts.ATTR_PREFERRED_FORMAT] = "wav"
    return voice.engine, voice.language, options


def _own_voice(hass: HomeAssistant, entry: CompanionConfigEntry) -> str | None:
    """Return the entry's own TTS entity, if it has one."""
    for registered in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id):
        if registered.domain == "tts":
            return registered.entity_id
    return None


def _in_satellite_format(hass: HomeAssistant, satellite: str, voice: Voice) -> Voice:
    """Return ``voice`` asking for the audio format the satellite asks its TTS for, if any.

    Only the format (the companion's satellite asks for WAV): no rate, so that a TTS that
    already speaks that format is not converted.
    """
    entity = async_get_entity(hass, satellite)
    options = entity.tts_options if isinstance(entity, AssistSatelliteEntity) else None
    wanted = (options or {}).get(tts.ATTR_PREFERRED_FORMAT)
    if not isinstance(wanted, str):
        return voice
    engine, language, options = voice
    return engine, language, {**options, tts.ATTR_PREFERRED_FORMAT: wanted}


async def async_audio_seconds(stream: tts.ResultStream) -> float | None:
    """Read a TTS stream to its end; return its length (WAV only, else None).

    A TTS that failed raises here: a media player that took the URL cannot say so.
    """
    header = bytearray()
    size = 0
    try:
        async for chunk in stream.async_stream_result():
            if len(header) < WAV_HEADER:
                header.extend(chunk[: WAV_HEADER - len(header)])
            size += len(chunk)
    except HomeAssistantError:
        raise
    except Exception as err:  # a TTS engine of another integration: any error it raises
        raise HomeAssistantError(str(err) or type(err).__name__) from err
    if stream.extension != "wav" or len(header) < WAV_HEADER or header[:4] != b"RIFF":
        return None
    channels, rate = struct.unpack_from("<HI", header, 22)
    bits = struct.unpack_from("<H", header, 34)[0]
    per_second = rate * channels * (bits // 8)
    return (size - WAV_HEADER) / per_second if per_second else None
