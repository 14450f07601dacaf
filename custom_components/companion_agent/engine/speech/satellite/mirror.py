"""What a satellite is told while its pipeline runs: Assist's events as Wyoming events.

A satellite follows the run to light its LEDs, play its sounds and stop streaming:
``detect`` while the pipeline listens for the wake word, ``detection`` when it heard it,
``transcribe`` when speech to text starts, ``voice-started``/``voice-stopped`` as the
person speaks, ``transcript`` with what was heard (a wake-word satellite goes back to
listening for its wake word then), ``synthesize`` with the answer's text, ``error``.
Audio is not here: the speaker streams it (``satellite_speaker.py``).

Pipeline events are read by their type's value (``stt-start``), so no Home Assistant is
needed; a missing or malformed field leaves the event out.
"""

from __future__ import annotations

from collections.abc import Mapping

from wyoming.asr import Transcribe, Transcript
from wyoming.error import Error
from wyoming.event import Event
from wyoming.tts import Synthesize, SynthesizeVoice
from wyoming.vad import VoiceStarted, VoiceStopped
from wyoming.wake import Detect, Detection

MAX_TEXT = 10_000


def mirror_pipeline_event(kind: str, data: Mapping[str, object]) -> Event | None:
    """Return the Wyoming event a satellite is sent for the pipeline event ``kind``, if any."""
    match kind:
        case "wake_word-start":
            return Detect().event()
        case "wake_word-end":
            output = _object(data.get("wake_word_output"))
            name = _text(output.get("wake_word_id"))
            return Detection(name=name, timestamp=_int(output.get("timestamp"))).event()
        case "stt-start":
            metadata = _object(data.get("metadata"))
            return Transcribe(language=_text(metadata.get("language"))).event()
        case "stt-vad-start":
            return VoiceStarted(timestamp=_int(data.get("timestamp"))).event()
        case "stt-vad-end":
            return VoiceStopped(timestamp=_int(data.get("timestamp"))).event()
        case "stt-end":
            text = _text(_object(data.get("stt_output")).get("text"))
            return Transcript(text=text or "").event()
        case "tts-start":
            voice = SynthesizeVoice(
                name=_text(data.get("voice")), language=_text(data.get("language"))
            )
            return Synthesize(text=_text(data.get("tts_input")) or "", voice=voice).event()
        case "error":
            return Error(
                text=_text(data.get("message")) or "", code=_text(data.get("code"))
            ).event()
        case _:
            return None


def _object(value: object) -> Mapping[str, object]:
    """Return ``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str | None:
    """Return a string ``value`` cut to ``MAX_TEXT``, else None."""
    return value[:MAX_TEXT] if isinstance(value, str) else None


def _int(value: object) -> int | None:
    """Return an integer ``value`` (no bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
