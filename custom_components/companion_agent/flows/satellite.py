"""Adding a Wyoming satellite: the satellite subentry flow, and what zeroconf discovers.

The subentry flow asks for the satellite's host and port and checks, live, that a
Wyoming *satellite* answers there (not a TTS or STT server). Zeroconf's discovery of a
``_wyoming._tcp`` service starts a config flow, never a subentry flow: the discovery step
(``SatelliteDiscoveryFlow``, a base of the integration's config flow) describes the
service, and when it is a satellite offers, on the *Discovered* card, to add it as a
satellite of a Companion Agent entry (the one chosen when there are several). Confirming
adds the subentry to that entry and ends the flow; the entry reloads with the satellite.
A satellite already added (by zeroconf name, or host and port) is not offered again, and
takes the new address zeroconf gives it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import voluptuous as vol
from homeassistant.config_entries import (
    SOURCE_RECONFIGURE,
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentry,
    ConfigSubentryFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.helpers.selector import SelectOptionDict, SelectSelector, SelectSelectorConfig
from homeassistant.helpers.service_info.zeroconf import ZeroconfServiceInfo

from ..const import (
    CONF_AREA,
    CONF_ZEROCONF_NAME,
    DEFAULT_SATELLITE_PORT,
    DOMAIN,
    SUBENTRY_SATELLITE,
)
from ..engine.errors import NotASatelliteError, SpeechError
from ..engine.speech import SatelliteInfo
from ..engine.speech.satellite import describe_satellite
from ..voice.server_address import address_schema

CONF_ENTRY = "entry"
SATELLITE_SCHEMA = address_schema(DEFAULT_SATELLITE_PORT)


def satellite_data(info: SatelliteInfo, host: str, port: int, **extra: Any) -> dict[str, Any]:
    """Return a satellite subentry's data: where it is, and the area it names."""
    data: dict[str, Any] = {CONF_HOST: host, CONF_PORT: port, **extra}
    if info.area:
        data[CONF_AREA] = info.area
    return data


def satellite_title(info: SatelliteInfo, host: str) -> str:
    """Return a satellite subentry's title: its own name, else its host."""
    return info.name or f"Satellite {host}"


def _satellites(entry: ConfigEntry) -> list[ConfigSubentry]:
    """Return the satellite subentries of ``entry``."""
    return [s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_SATELLITE]


class SatelliteSubentryFlow(ConfigSubentryFlow):
    """Add (or change) a Wyoming satellite by its host and port."""

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask for the satellite and check that a Wyoming satellite answers there."""
        errors: dict[str, str] = {}
        if user_input is not None:
            host, port = user_input[CONF_HOST].strip(), int(user_input[CONF_PORT])
            current = self._get_reconfigure_subentry() if self._reconfiguring else None
            for other in _satellites(self._get_entry()):
                same = (other.data[CONF_HOST], other.data[CONF_PORT]) == (host, port)
                if same and other is not current:
                    return self.async_abort(reason="already_configured")
            try:
                info = await describe_satellite(host, port)
            except NotASatelliteError:
                errors["base"] = "not_satellite"
            except SpeechError:
                errors["base"] = "cannot_connect"
            else:
                return self._save(info, host, port)
        suggested = user_input or (
            dict(self._get_reconfigure_subentry().data) if self._reconfiguring else {}
        )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(SATELLITE_SCHEMA, suggested),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change where the satellite is; the form starts from the current values."""
        return await self.async_step_user(user_input)

    @property
    def _reconfiguring(self) -> bool:
        """Say whether this flow changes an existing satellite."""
        return self.source == SOURCE_RECONFIGURE

    def _save(self, info: SatelliteInfo, host: str, port: int) -> SubentryFlowResult:
        """Create the satellite subentry, or update the one reconfigured."""
        if self._reconfiguring:
            subentry = self._get_reconfigure_subentry()
            keep = {k: v for k, v in subentry.data.items() if k == CONF_ZEROCONF_NAME}
            return self.async_update_and_abort(
                self._get_entry(), subentry, data=satellite_data(info, host, port, **keep)
            )
        return self.async_create_entry(
            title=satellite_title(info, host), data=satellite_data(info, host, port)
        )


class SatelliteDiscoveryFlow(ConfigFlow):
    """Zeroconf's ``_wyoming._tcp`` discovery: a satellite, offered to a companion entry."""

    _discovered: dict[str, Any]
    _title: str

    async def async_step_zeroconf(self, discovery_info: ZeroconfServiceInfo) -> ConfigFlowResult:
        """Check what was found: a satellite not yet added, and an entry to add it to."""
        if not discovery_info.port:
            return self.async_abort(reason="no_port")
        name = discovery_info.name.removesuffix(f".{discovery_info.type}")
        await self.async_set_unique_id(f"{SUBENTRY_SATELLITE}-{name}")
        self._abort_if_unique_id_configured()  # the person chose to ignore it
        host, port = discovery_info.host, discovery_info.port
        for entry in self.hass.config_entries.async_entries(DOMAIN):
            for satellite in _satellites(entry):
                data = satellite.data
                if data.get(CONF_ZEROCONF_NAME) == name or (data[CONF_HOST], data[CONF_PORT]) == (
                    host,
                    port,
                ):
                    if (data[CONF_HOST], data[CONF_PORT]) != (host, port):
                        self.hass.config_entries.async_update_subentry(
                            entry, satellite, data={**data, CONF_HOST: host, CONF_PORT: port}
                        )
                    return self.async_abort(reason="satellite_configured")
        try:
            info = await describe_satellite(host, port)
        except NotASatelliteError:
            return self.async_abort(reason="not_satellite")
        except SpeechError:
            return self.async_abort(reason="cannot_connect")
        if not self._companions():
            return self.async_abort(reason="no_companion_entry")
        self._discovered = satellite_data(info, host, port, **{CONF_ZEROCONF_NAME: name})
        self._title = satellite_title(info, host)
        self.context["title_placeholders"] = {"name": self._title}
        return await self.async_step_zeroconf_confirm()

    async def async_step_zeroconf_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Offer to add the satellite; add it to the chosen companion entry."""
        companions = self._companions()
        if not companions:
            return self.async_abort(reason="no_companion_entry")
        if user_input is not None:
            chosen = user_input.get(CONF_ENTRY, companions[0].entry_id)
            entry = next((e for e in companions if e.entry_id == chosen), companions[0])
            self.hass.config_entries.async_add_subentry(
                entry,
                ConfigSubentry(
                    data=MappingProxyType(self._discovered),
                    subentry_type=SUBENTRY_SATELLITE,
                    title=self._title,
                    unique_id=None,
                ),
            )
            return self.async_abort(reason="satellite_added")
        fields: dict[vol.Marker, object] = {}
        if len(companions) > 1:
            options = [SelectOptionDict(value=e.entry_id, label=e.title) for e in companions]
            fields[vol.Required(CONF_ENTRY, default=companions[0].entry_id)] = SelectSelector(
                SelectSelectorConfig(options=options)
            )
        return self.async_show_form(
            step_id="zeroconf_confirm",
            data_schema=vol.Schema(fields),
            description_placeholders={"name": self._title},
        )

    def _companions(self) -> list[ConfigEntry]:
        """Return the loaded companion entries a satellite could be added to."""
        return [
            entry
            for entry in self.hass.config_entries.async_entries(DOMAIN)
            if entry.state is ConfigEntryState.LOADED
        ]
