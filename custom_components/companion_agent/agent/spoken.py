"""Words for people: the lines the companion says when a turn cannot answer.

They are translation keys (``exceptions.spoken_*`` in ``strings.json``), read in the
conversation's language with English as the fallback, never strings inside the engine.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers.translation import async_get_translations
from homeassistant.util.language import matches

from ..const import DOMAIN
from ..engine.turn.request import SpokenLines

SHIPPED_LANGUAGES = ("en", "zh-Hans")
FALLBACK_LANGUAGE = "en"
KEYS = (
    "unreachable",
    "cut",
    "rounds",
    "deadline",
    "busy",
    "slow",
    "voice_refused",
    "disowned",
    "nothing_disowned",
)


async def async_spoken_lines(hass: HomeAssistant, language: str) -> SpokenLines:
    """Return the spoken lines for ``language`` (closest shipped one, English for the rest)."""
    best = matches(language, list(SHIPPED_LANGUAGES)) if language else []
    chosen = best[0] if best else FALLBACK_LANGUAGE
    texts = await _async_texts(hass, FALLBACK_LANGUAGE)
    if chosen != FALLBACK_LANGUAGE:
        texts |= {k: v for k, v in (await _async_texts(hass, chosen)).items() if v}
    return SpokenLines(**texts)


async def _async_texts(hass: HomeAssistant, language: str) -> dict[str, str]:
    """Return the spoken lines of one language, by their short key."""
    found = await async_get_translations(hass, language, "exceptions", [DOMAIN])
    prefix = f"component.{DOMAIN}.exceptions.spoken_"
    return {key: found.get(f"{prefix}{key}.message", "") for key in KEYS}
