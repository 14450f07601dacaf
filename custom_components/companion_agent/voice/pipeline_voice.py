"""Which voice an Assist pipeline speaks with, and which pipeline a satellite runs.

A satellite's pipeline is the one its *Assistant* select names (the entity's public
``pipeline_entity_id``; its state is a pipeline's name, or *preferred*), as HA resolves it
when the satellite starts a run. A pipeline's voice is its TTS engine, language and voice.

``assist_pipeline`` is imported only once it is set up: its audio requirements may be missing
where Assist is not in use.
"""

from __future__ import annotations

from dataclasses import dataclass

from homeassistant.components import tts
from homeassistant.components.assist_satellite import AssistSatelliteEntity
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er

from ..compat import async_get_entity
from ..const import LOGGER

ASSIST_PIPELINE = "assist_pipeline"
PREFERRED = "preferred"


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineVoice:
    """A pipeline's TTS: the engine (an entity id), its language and its options."""

    engine: str
    language: str | None
    options: dict[str, str]


def satellite_of(
    hass: HomeAssistant, satellite_id: str | None, device_id: str | None
) -> str | None:
    """Return the satellite a turn came from: the one named, else its device's, else None."""
    if satellite_id is not None:
        return satellite_id
    registry = er.async_get(hass)
    entries = er.async_entries_for_device(registry, device_id) if device_id else []
    return next((e.entity_id for e in entries if e.domain == Platform.ASSIST_SATELLITE), None)


def satellite_voice(hass: HomeAssistant, satellite: str) -> PipelineVoice | None:
    """Return the voice of the pipeline ``satellite`` runs, if Assist is set up and it exists."""
    if ASSIST_PIPELINE not in hass.config.components:
        return None
    return pipeline_voice(hass, satellite_pipeline(hass, satellite))


def satellite_pipeline(hass: HomeAssistant, satellite: str) -> str | None:
    """Return the id of the pipeline the satellite selected (None: the preferred one)."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipelines,
    )

    entity = async_get_entity(hass, satellite)
    select = entity.pipeline_entity_id if isinstance(entity, AssistSatelliteEntity) else None
    chosen = hass.states.get(select) if select is not None else None
    if chosen is None or chosen.state == PREFERRED:
        return None
    for pipeline in async_get_pipelines(hass):
        if pipeline.name == chosen.state:
            return pipeline.id
    LOGGER.debug("%s selects pipeline %r, which is gone", satellite, chosen.state)
    return None


def pipeline_voice(hass: HomeAssistant, pipeline_id: str | None) -> PipelineVoice | None:
    """Return a pipeline's voice (None: the preferred pipeline), if its TTS engine exists."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipeline,
    )

    pipeline = async_get_pipeline(hass, pipeline_id)
    engine = tts.async_resolve_engine(hass, pipeline.tts_engine)
    if engine is None:
        return None
    options = {tts.ATTR_VOICE: pipeline.tts_voice} if pipeline.tts_voice else {}
    return PipelineVoice(engine=engine, language=pipeline.tts_language, options=options)
