"""The AI task sub-entry flow: the model that answers tasks, and a vision model for images."""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.const import CONF_NAME

from ..const import DEFAULT_AI_TASK_NAME, IMAGES_OFF, TASK_SECTIONS
from ..runtime import CompanionConfigEntry
from .roles import RolesSubentryFlow, role_sections


class AITaskSubentryFlow(RolesSubentryFlow):
    """Add or change an AI task entity: which models answer its tasks."""

    roles = TASK_SECTIONS

    def form(self, entry: CompanionConfigEntry, is_new: bool) -> vol.Schema:
        """Return the form: a name (new only), the task's model and its vision model."""
        fields: dict[Any, Any] = {}
        if is_new:
            fields[vol.Required(CONF_NAME, default=DEFAULT_AI_TASK_NAME)] = str
        return vol.Schema({**fields, **role_sections(self.roles, images_default=IMAGES_OFF)})
