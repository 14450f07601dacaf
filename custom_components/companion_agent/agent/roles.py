"""A sub-entry's model roles (its form's sections) as the engine's ``RoleChoices``.

Each role section may hold a server URL, an API key, a model name, a temperature, a token
limit, a first-token wait and a wait for a busy server; the chat section also says whether
its model sees images.
Anything missing or of the wrong type is left to the profile and the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.const import CONF_API_KEY

from ..const import (
    CONF_BASE_URL,
    CONF_BUSY_TIMEOUT,
    CONF_FIRST_TOKEN_TIMEOUT,
    CONF_IMAGES,
    CONF_MAX_TOKENS,
    CONF_MODEL,
    CONF_TEMPERATURE,
    IMAGES_OFF,
    IMAGES_ON,
    ROLE_SECTIONS,
)
from ..engine.engine import RoleChoice, RoleChoices


def role_choices(data: Mapping[str, Any]) -> RoleChoices:
    """Return the roles a sub-entry's data chooses (sections it lacks choose nothing)."""
    chat, vision, memory, summary = (_section(data, name) for name in ROLE_SECTIONS)
    return RoleChoices(
        chat=role_choice(chat),
        vision=role_choice(vision),
        memory=role_choice(memory),
        summary=role_choice(summary),
        chat_sees_images={IMAGES_ON: True, IMAGES_OFF: False}.get(str(chat.get(CONF_IMAGES))),
    )


def role_choice(section: Mapping[str, Any]) -> RoleChoice:
    """Return one role's choice from its section."""
    return RoleChoice(
        base_url=_text(section.get(CONF_BASE_URL)),
        api_key=_text(section.get(CONF_API_KEY)),
        model=_text(section.get(CONF_MODEL)),
        temperature=_number(section.get(CONF_TEMPERATURE)),
        max_tokens=_whole(section.get(CONF_MAX_TOKENS)),
        first_token_timeout=_number(section.get(CONF_FIRST_TOKEN_TIMEOUT)),
        busy_timeout=_number(section.get(CONF_BUSY_TIMEOUT)),
    )


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """Return a section of the data, or an empty one."""
    value = data.get(name)
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str | None:
    """Return a non-empty stripped string, or None."""
    return value.strip() or None if isinstance(value, str) else None


def _number(value: object) -> float | None:
    """Return a number as a float, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _whole(value: object) -> int | None:
    """Return a positive whole number, or None."""
    number = _number(value)
    return int(number) if number is not None and number >= 1 else None
