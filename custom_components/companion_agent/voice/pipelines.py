"""Assist pipelines where HA's own intents answer before the companion can ask first.

With "prefer handling commands locally" on (``Pipeline.prefer_local_intents``), HA matches
simple commands ("unlock the front door") with its built-in intents and runs them before the
pipeline's conversation agent sees the words, so the guard never asks for a confirmation.
Each pipeline that does that with one of an entry's agents gets a fixable repair issue; it is
checked at setup and whenever a pipeline is created, changed or deleted (HA tells of changes
through an internal, ``compat.async_listen_pipeline_changes``: without it, at setup only).

``assist_pipeline`` is imported only once it is set up: its audio requirements may be missing
where Assist is not in use.
"""

from __future__ import annotations

from functools import partial

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import EVENT_COMPONENT_LOADED
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import EventComponentLoaded

from ..compat import async_listen_pipeline_changes
from ..const import DOMAIN, ISSUE_LOCAL_INTENTS

ISSUE_PREFIX = f"{ISSUE_LOCAL_INTENTS}_"
ASSIST_PIPELINE = "assist_pipeline"


@callback
def async_watch_pipelines(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Check the pipelines now (or once Assist is set up) and on every change, until unload."""
    if ASSIST_PIPELINE in hass.config.components:
        _async_follow(hass, entry)
        return

    @callback
    def _async_loaded(_event: Event[EventComponentLoaded]) -> None:
        """Start following the pipelines once Assist is set up."""
        _async_follow(hass, entry)

    entry.async_on_unload(
        hass.bus.async_listen(
            EVENT_COMPONENT_LOADED,
            _async_loaded,
            event_filter=_is_assist_pipeline,
        )
    )


@callback
def _is_assist_pipeline(data: EventComponentLoaded) -> bool:
    """Tell whether the component that was set up is Assist's pipelines."""
    return data["component"] == ASSIST_PIPELINE


@callback
def _async_follow(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Sync the issues now and after every change to the stored pipelines (where HA tells)."""
    unsubscribe = async_listen_pipeline_changes(
        hass, partial(async_sync_local_intents, hass, entry)
    )
    if unsubscribe is not None:
        entry.async_on_unload(unsubscribe)
    async_sync_local_intents(hass, entry)


@callback
def async_sync_local_intents(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Raise an issue per pipeline that answers locally before one of the entry's agents."""
    from homeassistant.components import assist_pipeline  # noqa: PLC0415

    agents = {
        agent.entity_id
        for agent in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if agent.domain == CONVERSATION_DOMAIN
    }
    wanted = {
        f"{ISSUE_PREFIX}{pipeline.id}": pipeline
        for pipeline in assist_pipeline.async_get_pipelines(hass)
        if pipeline.prefer_local_intents and pipeline.conversation_engine in agents
    }
    for (domain, issue_id), issue in list(ir.async_get(hass).issues.items()):
        ours = domain == DOMAIN and (issue.data or {}).get("entry_id") == entry.entry_id
        if ours and issue_id.startswith(ISSUE_PREFIX) and issue_id not in wanted:
            ir.async_delete_issue(hass, DOMAIN, issue_id)
    for issue_id, pipeline in wanted.items():
        agent = hass.states.get(pipeline.conversation_engine)
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id,
            is_fixable=True,
            severity=ir.IssueSeverity.WARNING,
            translation_key=ISSUE_LOCAL_INTENTS,
            translation_placeholders={
                "pipeline": pipeline.name,
                "agent": agent.name if agent is not None else pipeline.conversation_engine,
            },
            data={"entry_id": entry.entry_id, "pipeline_id": pipeline.id},
        )


async def async_turn_off_local_intents(hass: HomeAssistant, pipeline_id: str) -> bool:
    """Turn "prefer handling commands locally" off for a pipeline; False if it is gone."""
    if ASSIST_PIPELINE not in hass.config.components:
        return False
    from homeassistant.components import assist_pipeline  # noqa: PLC0415

    pipeline = next(
        (p for p in assist_pipeline.async_get_pipelines(hass) if p.id == pipeline_id), None
    )
    if pipeline is None:
        return False
    if pipeline.prefer_local_intents:
        await assist_pipeline.async_update_pipeline(hass, pipeline, prefer_local_intents=False)
    return True
