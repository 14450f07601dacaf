"""What the glue reads of Home Assistant beyond its plain public calls, each in one function.

An entity object is found through the public entity platform API. Where HA offers no
public way, one function reads the internal and checks its shape; when it is missing or
of another shape (a newer HA), the feature it serves turns off: ``async_feature_off`` logs
one warning and raises one repair issue per HA start, and everything else goes on.
``docs/ha-compatibility.md`` lists each read, its guard and the releases known to have it.
"""

from __future__ import annotations

from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_platform
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.entity import Entity

from .const import DOMAIN, LOGGER


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
