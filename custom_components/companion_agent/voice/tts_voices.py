"""The voices a TTS entity offers per request: HA's voice list, and checking what is asked."""

from __future__ import annotations

from collections.abc import Iterable

from homeassistant.components import tts
from homeassistant.exceptions import ServiceValidationError

from ..const import DOMAIN
from ..engine.chars import clean_text
from ..engine.speech import TtsVoice

MAX_NAMED = 20  # voices named in an error; a server may offer hundreds


def supported_voices(voices: Iterable[TtsVoice], language: str) -> list[tts.Voice] | None:
    """Return HA's voices for ``language``, sorted by name, or None if there are none."""
    found = [
        tts.Voice(voice_id=voice.name, name=voice.description or voice.name)
        for voice in voices
        if language in voice.languages
    ]
    return sorted(found, key=lambda voice: voice.name) or None


def offered_voice(
    voices: tuple[TtsVoice, ...], name: str, speaker: str | None, languages: Iterable[str]
) -> TtsVoice:
    """Return the voice ``name`` if it is offered (with ``speaker``), or raise a clear error."""
    voice = next((v for v in voices if v.name == name), None)
    if voice is None:
        raise unknown_voice_error(name, voices, languages)
    if speaker is not None and speaker not in voice.speakers:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="tts_speaker_unknown",
            translation_placeholders={
                "voice": name,
                "speaker": clean_text(speaker, 100),
                "speakers": _names(voice.speakers),
            },
        )
    return voice


def unknown_voice_error(
    name: str, voices: Iterable[TtsVoice], languages: Iterable[str]
) -> ServiceValidationError:
    """Return the error for a voice not on offer, naming those in ``languages`` first."""
    wanted = set(languages)
    voices = sorted(voices, key=lambda voice: wanted.isdisjoint(voice.languages))
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="tts_voice_unknown",
        translation_placeholders={
            "voice": clean_text(name, 100),
            "voices": _names(voice.name for voice in voices),
        },
    )


def _names(names: Iterable[str]) -> str:
    """Return up to MAX_NAMED names, comma-separated ("-" for none, "…" for more)."""
    listed = list(names)
    text = ", ".join(listed[:MAX_NAMED]) or "-"
    return f"{text}, …" if len(listed) > MAX_NAMED else text
