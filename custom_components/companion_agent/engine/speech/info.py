"""What a Wyoming server (TTS, STT, satellite) says about itself, read tolerantly from ``info``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..chars import valid_text


@dataclass(frozen=True, slots=True, kw_only=True)
class TtsVoice:
    """One voice a TTS server advertises; ``speakers`` is empty for single-speaker voices."""

    name: str
    languages: tuple[str, ...] = ()
    speakers: tuple[str, ...] = ()
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TtsInfo:
    """The TTS programs of a server, their voices, and whether any streams text in."""

    programs: tuple[str, ...] = ()
    voices: tuple[TtsVoice, ...] = ()
    supports_streaming: bool = False

    def voice(self, name: str) -> TtsVoice | None:
        """Return the advertised voice called ``name``, or None."""
        return next((v for v in self.voices if v.name == name), None)


def parse_tts_info(data: Mapping[str, object]) -> TtsInfo:
    """Read the ``tts`` programs of an ``info`` event's data, skipping what is malformed."""
    programs: list[str] = []
    voices: list[TtsVoice] = []
    streaming = False
    for program in _dicts(data.get("tts")):
        programs.append(_str(program.get("name")) or "")
        streaming = streaming or program.get("supports_synthesize_streaming") is True
        for voice in _dicts(program.get("voices")):
            name = _str(voice.get("name"))
            if name is None:
                continue
            voices.append(
                TtsVoice(
                    name=name,
                    languages=tuple(_strs(voice.get("languages"))),
                    speakers=tuple(
                        speaker_name
                        for speaker in _dicts(voice.get("speakers"))
                        if (speaker_name := _str(speaker.get("name"))) is not None
                    ),
                    description=_str(voice.get("description")),
                )
            )
    return TtsInfo(programs=tuple(programs), voices=tuple(voices), supports_streaming=streaming)


@dataclass(frozen=True, slots=True, kw_only=True)
class AsrModel:
    """One speech-to-text model a server advertises, and the languages it understands."""

    name: str
    program: str
    languages: tuple[str, ...] = ()
    installed: bool = True
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AsrInfo:
    """The ASR programs of a server, their models, and whether any streams its transcript."""

    programs: tuple[str, ...] = ()
    models: tuple[AsrModel, ...] = ()
    supports_streaming: bool = False

    @property
    def installed(self) -> tuple[AsrModel, ...]:
        """Return the models the server can use now."""
        return tuple(model for model in self.models if model.installed)

    def model(self, name: str) -> AsrModel | None:
        """Return the advertised model called ``name``, or None."""
        return next((m for m in self.models if m.name == name), None)


def parse_asr_info(data: Mapping[str, object]) -> AsrInfo:
    """Read the ``asr`` programs of an ``info`` event's data, skipping what is malformed."""
    programs: list[str] = []
    models: list[AsrModel] = []
    streaming = False
    for program in _dicts(data.get("asr")):
        program_name = _str(program.get("name")) or ""
        programs.append(program_name)
        streaming = streaming or program.get("supports_transcript_streaming") is True
        for model in _dicts(program.get("models")):
            name = _str(model.get("name"))
            if name is None:
                continue
            models.append(
                AsrModel(
                    name=name,
                    program=program_name,
                    languages=tuple(_strs(model.get("languages"))),
                    installed=model.get("installed") is not False,
                    description=_str(model.get("description")),
                )
            )
    return AsrInfo(programs=tuple(programs), models=tuple(models), supports_streaming=streaming)


# A satellite names itself; a longer name (or area, description) is cut to this.
MAX_SATELLITE_TEXT = 100
MAX_WAKE_WORDS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class SatelliteWakeWord:
    """A wake word a satellite (or its wake word service) can listen for."""

    id: str
    phrase: str
    languages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SatelliteInfo:
    """What a Wyoming satellite says about itself: its name, place, and wake words."""

    name: str
    area: str | None = None
    description: str | None = None
    version: str | None = None
    has_vad: bool = False
    wake_words: tuple[SatelliteWakeWord, ...] = ()
    active_wake_words: tuple[str, ...] = ()
    max_active_wake_words: int | None = None

    def phrase(self, wake_word_id: str | None) -> str | None:
        """Return the phrase of wake word ``wake_word_id`` (its id if it is not listed)."""
        if wake_word_id is None:
            return None
        found = next((w for w in self.wake_words if w.id == wake_word_id), None)
        return found.phrase if found is not None else wake_word_id


def parse_satellite_info(data: Mapping[str, object]) -> SatelliteInfo | None:
    """Read an ``info`` event's ``satellite``; None when the server is no (installed) satellite.

    Texts are cut to ``MAX_SATELLITE_TEXT`` characters; what is malformed is left out.
    """
    satellite = data.get("satellite")
    if not isinstance(satellite, dict) or satellite.get("installed") is False:
        return None
    wake_words = [
        SatelliteWakeWord(
            id=name[:MAX_SATELLITE_TEXT],
            phrase=(_str(model.get("phrase")) or name)[:MAX_SATELLITE_TEXT],
            languages=tuple(_strs(model.get("languages"))),
        )
        for program in _dicts(data.get("wake"))
        for model in _dicts(program.get("models"))
        if (name := _str(model.get("name"))) and model.get("installed") is not False
    ]
    limit = satellite.get("max_active_wake_words")
    return SatelliteInfo(
        name=_text(satellite.get("name")) or "",
        area=_text(satellite.get("area")),
        description=_text(satellite.get("description")),
        version=_text(satellite.get("version")),
        has_vad=satellite.get("has_vad") is True,
        wake_words=tuple(wake_words[:MAX_WAKE_WORDS]),
        active_wake_words=tuple(
            name[:MAX_SATELLITE_TEXT] for name in _strs(satellite.get("active_wake_words"))
        )[:MAX_WAKE_WORDS],
        max_active_wake_words=limit
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0
        else None,
    )


def _text(value: object) -> str | None:
    """Return a string ``value`` stripped and cut to ``MAX_SATELLITE_TEXT``; None if empty."""
    if not isinstance(value, str) or not value.strip():
        return None
    return valid_text(value.strip())[:MAX_SATELLITE_TEXT]


def _dicts(value: object) -> list[Mapping[str, object]]:
    """Return the mappings in ``value`` if it is a list, else nothing."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _strs(value: object) -> list[str]:
    """Return the strings in ``value`` if it is a list, else nothing."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def _str(value: object) -> str | None:
    """Return ``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None
