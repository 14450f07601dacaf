"""The host and port a Wyoming server or satellite answers on, as a subentry flow asks them."""

from __future__ import annotations

import voluptuous as vol
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.helpers.selector import NumberSelector, NumberSelectorConfig


def address_schema(default_port: int) -> vol.Schema:
    """Return the form's schema: a host, and a port from 1 to 65535 (``default_port``)."""
    return vol.Schema(
        {
            vol.Required(CONF_HOST): str,
            vol.Required(CONF_PORT, default=default_port): vol.All(
                NumberSelector(NumberSelectorConfig(min=1, max=65535, step=1)), vol.Coerce(int)
            ),
        }
    )
