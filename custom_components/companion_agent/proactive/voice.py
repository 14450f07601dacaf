"""Which voice speaks first on a device: the satellite's own pipeline, else the entry's voice.

A satellite speaks proactive turns with the TTS of the Assist pipeline it uses for its
answers (its pipeline select, or the preferred pipeline when it has none or it says
*preferred*), so it sounds the same either way, in the audio format the satellite asks
for (the companion's satellite: WAV, as Piper makes it). A media player has no pipeline:
the entry's own voice speaks (piper's WAV as it is: no conversion, no ffmpeg, no delay),
else the preferred pipeline's TTS, else HA's default TTS engine.

``assist_pipeline`` is imported only once it is set up: its audio requirements may be missing
where Assist is not in use.

``async_audio_seconds`` reads a stream a media player was given, to learn whether the TTS
failed (the player cannot tell) and, for WAV, the audio's exact length.
"""

from __future__ import annotations

import struct

from homeassistant.components import tts
from homeassistant.components.assist_satellite.const import DATA_COMPONENT as SATELLITES
from homeassistant.core import HomeAssistant, split_entity_id
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er

from ..const import DOMAIN, LOGGER
from ..runtime import CompanionConfigEntry

ASSIST_PIPELINE = "assist_pipeline"
PREFERRED = "preferred"
WAV_HEADER = 44

type Voice = tuple[str, str | None, dict[str, str]]
"""A TTS engine, its language (None: the engine's own) and its options."""


def async_voice_for(hass: HomeAssistant, entry: CompanionConfigEntry, target: str) -> Voice:
    """Return the TTS engine, language and options proactive speech on ``target`` uses."""
    own = _own_voice(hass, entry)
    if (
        split_entity_id(target)[0] == "assist_satellite"
        and ASSIST_PIPELINE in hass.config.components
    ):
        voice = _pipeline_voice(hass, _satellite_pipeline(hass, target), own)
        if voice is not None:
            return _in_satellite_format(hass, target, voice)
    if own is not None:
        return own, None, {tts.ATTR_PREFERRED_FORMAT: "wav"}
    if ASSIST_PIPELINE in hass.config.components:
        voice = _pipeline_voice(hass, None, own)
        if voice is not None:
            return voice
    if (engine := tts.async_default_engine(hass)) is not None:
        return engine, None, {}
    raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_tts_engine")


def _own_voice(hass: HomeAssistant, entry: CompanionConfigEntry) -> str | None:
    """Return the entry's own TTS entity, if it has one."""
    for registered in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id):
        if registered.domain == "tts":
            return registered.entity_id
    return None


def _satellite_pipeline(hass: HomeAssistant, satellite: str) -> str | None:
    """Return the id of the pipeline the satellite selected (None: the preferred one)."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipelines,
    )

    component = hass.data.get(SATELLITES)
    entity = component.get_entity(satellite) if component is not None else None
    select = entity.pipeline_entity_id if entity is not None else None
    chosen = hass.states.get(select) if select is not None else None
    if chosen is None or chosen.state == PREFERRED:
        return None
    for pipeline in async_get_pipelines(hass):
        if pipeline.name == chosen.state:
            return pipeline.id
    LOGGER.debug("%s selects pipeline %r, which is gone", satellite, chosen.state)
    return None


def _in_satellite_format(hass: HomeAssistant, satellite: str, voice: Voice) -> Voice:
    """Return ``voice`` asking for the audio format the satellite asks its TTS for, if any.

    Only the format (the companion's satellite asks for WAV): no rate, so that a TTS that
    already speaks that format is not converted.
    """
    component = hass.data.get(SATELLITES)
    entity = component.get_entity(satellite) if component is not None else None
    wanted = (entity.tts_options or {}).get(tts.ATTR_PREFERRED_FORMAT) if entity else None
    if not isinstance(wanted, str):
        return voice
    engine, language, options = voice
    return engine, language, {**options, tts.ATTR_PREFERRED_FORMAT: wanted}


def _pipeline_voice(hass: HomeAssistant, pipeline_id: str | None, own: str | None) -> Voice | None:
    """Return the voice of a pipeline (None: the preferred one), if its TTS engine exists."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipeline,
    )

    pipeline = async_get_pipeline(hass, pipeline_id)
    engine = tts.async_resolve_engine(hass, pipeline.tts_engine)
    if engine is None:
        return None
    options: dict[str, str] = {tts.ATTR_VOICE: pipeline.tts_voice} if pipeline.tts_voice else {}
    if engine == own:
        options[tts.ATTR_PREFERRED_FORMAT] = "wav"
    return engine, pipeline.tts_language, options


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
