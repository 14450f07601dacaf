"""What a satellite is told while its pipeline runs: Assist's events as Wyoming events.

A satellite follows the run to light its LEDs, play its sounds and stop streaming:
``detect`` while the pipeline listens for the wake word, ``detection`` when it heard it,
``transcribe`` when speech to text starts, ``voice-started``/``voice-stopped`` as the
person speaks, ``transcript`` with what was heard (a wake-word satellite goes back to
listening for its wake word then), ``synthesize`` with the answer's text, ``error``.
Audio is not here: the speaker streams it (``satellite_speaker.py``).

A satellite that wakes on its own wake word (wyoming-satellite's local wake word mode, which
asks for runs from ``asr``) streams its microphone from the wake word until it is sent
``transcript`` or ``run-satellite`` (newer versions also ``error`` and ``pause-satellite``),
and nothing makes it stream again without its wake word. To hear the answer to a reply that
asks, its ``transcript`` is held back until the reply is known (the host decides), and
``release_event`` is what it is then told: the held ``transcript``, when none of the answer
has been sent to play (it plays its "done" sound and runs its transcript command, as it
would have at once); else ``run-satellite``, which returns it to its wake word silently (a
``transcript`` would play the "done" sound into the answer, and its ``run-satellite``
starts nothing in this mode: only a satellite that streams all the time asks for a new run
on it, and such a satellite is never held).

Pipeline events are read by their type's value (``stt-start``), so no Home Assistant is
needed; a missing or malformed field leaves the event out.
"""

from __future__ import annotations

from collections.abc import Mapping

from wyoming.asr import Transcribe, Transcript
from wyoming.error import Error
from wyoming.event import Event
from wyoming.satellite import RunSatellite
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


def release_event(transcript: Event | None, *, answering: bool) -> Event:
    """Return what ends a held satellite's stream: its ``transcript``, or ``run-satellite``.

    ``answering``: the answer has started (or been asked) to play; ``transcript`` None: the
    run heard nothing (an empty ``transcript`` ends it).
    """
    if answering:
        return RunSatellite().event()
    return transcript if transcript is not None else Transcript(text="").event()


def _object(value: object) -> Mapping[str, object]:
    """Return ``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str | None:
    """Return a string ``value`` cut to ``MAX_TEXT``, else None."""
    return value[:MAX_TEXT] if isinstance(value, str) else None


def _int(value: object) -> int | None:
    """Return an integer ``value`` (no bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
