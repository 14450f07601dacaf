"""The spoken lines as the HA glue ships them, read from its English translation file."""

from __future__ import annotations

import json
from pathlib import Path

from custom_components.companion_agent.engine.turn.loop import SpokenLines

_TRANSLATIONS = (
    Path(__file__).resolve().parents[2] / "custom_components" / "companion_agent" / "translations"
)


def spoken_lines(language: str = "en") -> SpokenLines:
    """Return the spoken lines of one shipped translation."""
    data = json.loads((_TRANSLATIONS / f"{language}.json").read_text(encoding="utf-8"))
    found = data["exceptions"]
    return SpokenLines(
        unreachable=found["spoken_unreachable"]["message"],
        cut=found["spoken_cut"]["message"],
        rounds=found["spoken_rounds"]["message"],
        deadline=found["spoken_deadline"]["message"],
        busy=found["spoken_busy"]["message"],
        slow=found["spoken_slow"]["message"],
        voice_refused=found["spoken_voice_refused"]["message"],
        disowned=found["spoken_disowned"]["message"],
        nothing_disowned=found["spoken_nothing_disowned"]["message"],
    )


ENGLISH = spoken_lines()
