"""What the glue reads of Home Assistant beyond its plain public calls, each in one function.

An entity object is found through the public entity platform API. Where HA offers no
public way, one function reads the internal and checks its shape; when it is missing or
of another shape (a newer HA), the feature it serves turns off: ``async_feature_off`` logs
one warning and raises one repair issue per HA start, and everything else goes on.
``docs/ha-compatibility.md`` lists each read, its guard and the releases known to have it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from awesomeversion import AwesomeVersion
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import CALLBACK_TYPE, Context, HomeAssistant, callback
from homeassistant.helpers import entity_platform
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.entity import Entity

from .const import (
    DOMAIN,
    ISSUE_COMPAT_CHIME,
    ISSUE_COMPAT_PIPELINE_CHANGES,
    ISSUE_COMPAT_RUNS,
    LOGGER,
)

DEFAULT_STREAM_RESPONSE_CHARS = 60
"""``STREAM_RESPONSE_CHARS`` as HA 2026.2.3 has it: used where HA's own is not found."""
CHIME = "Home Assistant's pre-announcement chime on the companion's satellite"
PIPELINE_CHANGES = "Checking voice assistants for local commands again after each change"
HEAD_START = "The head start of the companion's voice in Assist runs without a satellite"


@dataclass(frozen=True, slots=True, kw_only=True)
class Chime:
    """Home Assistant's pre-announcement chime: the path it serves it at, and its file."""

    url_path: str
    file: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningPipeline:
    """A running Assist pipeline run: its pipeline, and the stage it ends with."""

    pipeline_id: str
    end_stage: str


@callback
def async_get_entity(hass: HomeAssistant, entity_id: str) -> Entity | None:
    """Return the entity object behind a registered entity id, or None.

    The registry names the integration that made the entity; that integration's entity
    platforms (``entity_platform.async_get_platforms``) hold the object.
    """
    registered = er.async_get(hass).async_get(entity_id)
    if registered is None:
        return None
    for platform in entity_platform.async_get_platforms(hass, registered.platform):
        if platform.domain == registered.domain and entity_id in platform.entities:
            return platform.entities[entity_id]
    return None


@callback
def async_feature_off(hass: HomeAssistant, issue_key: str, feature: str, missing: str) -> None:
    """Say once per HA start that ``feature`` is off because HA lacks ``missing``.

    One warning in the log and one repair issue (``issue_key``, also its translation key);
    an issue raised since HA started is active, so later calls say nothing.
    """
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issue_key)
    if issue is not None and issue.active:
        return
    LOGGER.warning(
        "%s is off: Home Assistant %s has no %s as this version of the integration reads it;"
        " everything else works",
        feature,
        HA_VERSION,
        missing,
    )
    ir.async_create_issue(
        hass,
        DOMAIN,
        issue_key,
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key=issue_key,
        translation_placeholders={"version": HA_VERSION},
    )


@callback
def async_pipeline_runs(hass: HomeAssistant, context: Context) -> list[RunningPipeline] | None:
    """Return Assist's running pipeline runs started with ``context``; None: not readable.

    HA exports no way to find them: this reads its table of runs
    (``hass.data["assist_pipeline"].pipeline_runs._pipeline_runs``: pipeline id → run id →
    run) and of a run only its public fields. Assist must be set up. Anything missing or of
    another shape and the head start of our voice for runs without a satellite is off.
    """
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        KEY_ASSIST_PIPELINE,
    )

    runs = getattr(hass.data.get(KEY_ASSIST_PIPELINE), "pipeline_runs", None)
    table = getattr(runs, "_pipeline_runs", None)
    if not isinstance(table, dict) or not all(isinstance(t, dict) for t in table.values()):
        async_feature_off(hass, ISSUE_COMPAT_RUNS, HEAD_START, "table of running pipelines")
        return None
    found: list[RunningPipeline] = []
    for run in (run for by_id in table.values() for run in by_id.values()):
        started = getattr(run, "context", None)
        pipeline_id = getattr(getattr(run, "pipeline", None), "id", None)
        end_stage = getattr(run, "end_stage", None)
        if not (
            isinstance(started, Context)
            and isinstance(pipeline_id, str)
            and isinstance(end_stage, str)
        ):
            async_feature_off(hass, ISSUE_COMPAT_RUNS, HEAD_START, "pipeline run of that shape")
            return None
        if started.id == context.id:
            found.append(RunningPipeline(pipeline_id=pipeline_id, end_stage=end_stage))
    return found


@callback
def async_listen_pipeline_changes(
    hass: HomeAssistant, listener: Callable[[], None]
) -> CALLBACK_TYPE | None:
    """Call ``listener`` after each change to Assist's stored pipelines; None: cannot.

    HA exports no listener: this subscribes to Assist's pipeline collection
    (``hass.data["assist_pipeline"].pipeline_store.async_add_change_set_listener``), as
    Assist's own pipeline selects do. Assist must be set up. Missing, and the pipelines are
    checked only when the entry is set up.
    """
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        KEY_ASSIST_PIPELINE,
    )

    store = getattr(hass.data.get(KEY_ASSIST_PIPELINE), "pipeline_store", None)
    subscribe = getattr(store, "async_add_change_set_listener", None)
    if not callable(subscribe):
        async_feature_off(
            hass, ISSUE_COMPAT_PIPELINE_CHANGES, PIPELINE_CHANGES, "pipeline change listener"
        )
        return None

    async def _async_changed(_changes: Iterable[object]) -> None:
        """Tell the listener that the pipelines changed."""
        listener()

    return cast(CALLBACK_TYPE, subscribe(_async_changed))


async def async_preannounce_chime(hass: HomeAssistant) -> Chime | None:
    """Return HA's pre-announcement chime, read from its file; None: not found.

    HA serves the chime at ``assist_satellite.const.PREANNOUNCE_URL`` from the file
    ``PREANNOUNCE_FILENAME`` beside ``assist_satellite``'s code, a location it does not
    export; reading the file needs no HTTP round trip to HA. Either name missing, or no file
    there, and announcements on the companion's satellite play without a chime.
    """
    from homeassistant.components import assist_satellite  # noqa: PLC0415
    from homeassistant.components.assist_satellite import const  # noqa: PLC0415

    url_path = getattr(const, "PREANNOUNCE_URL", None)
    name = getattr(const, "PREANNOUNCE_FILENAME", None)
    file = Path(assist_satellite.__file__).parent / name if isinstance(name, str) else None
    if (
        not isinstance(url_path, str)
        or file is None
        or not await hass.async_add_executor_job(file.is_file)
    ):
        async_feature_off(hass, ISSUE_COMPAT_CHIME, CHIME, "pre-announcement chime file")
        return None
    return Chime(url_path=url_path, file=str(file))


@callback
def stream_response_chars(hass: HomeAssistant) -> int:
    """Return how many characters of reply Assist waits for before it opens a streaming TTS.

    HA's own number, ``STREAM_RESPONSE_CHARS`` in ``assist_pipeline.pipeline`` (a module
    constant it does not export), when Assist is set up and has it; else 2026.2.3's 60.
    Only an estimate rests on it (when HA began speaking), so a fallback is no feature off.
    """
    if "assist_pipeline" not in hass.config.components:
        return DEFAULT_STREAM_RESPONSE_CHARS
    from homeassistant.components.assist_pipeline import pipeline  # noqa: PLC0415

    found = getattr(pipeline, "STREAM_RESPONSE_CHARS", None)
    if isinstance(found, int) and not isinstance(found, bool) and found >= 0:
        return found
    LOGGER.debug("Assist has no STREAM_RESPONSE_CHARS: %s assumed", DEFAULT_STREAM_RESPONSE_CHARS)
    return DEFAULT_STREAM_RESPONSE_CHARS


CONVERTER_HOLDS: tuple[tuple[str, float], ...] = (("2026.9.0", 5.0), ("2026.11.0", 1.5))
"""Seconds of a streamed WAV that HA's TTS converter takes in before it lets any out, by the
first release that no longer holds that much: ffmpeg probing its input (2026.2 – 2026.8),
with ``-probesize 32`` (2026.9 – 2026.10); from 2026.11 a matching WAV passes through and
another rate is converted from raw PCM at once."""


def converter_hold_seconds(version: str = HA_VERSION) -> float:
    """Return how much audio HA's TTS converter holds back on this release (0: none)."""
    release = AwesomeVersion(version)
    for before, held in CONVERTER_HOLDS:
        if release < AwesomeVersion(before):
            return held
    return 0.0
