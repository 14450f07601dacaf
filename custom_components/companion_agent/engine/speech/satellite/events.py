"""What a Wyoming satellite says, as typed inputs: checked at the boundary, never trusted.

``SatelliteEvents.read`` turns one Wyoming event from the satellite into a
``SatelliteInput``: a request to run a pipeline, microphone audio (already converted to the
16 kHz, 16-bit mono PCM Assist's STT takes), the end of that audio, ``played``, a wake
word detection, ``ping``/``pong``, its ``info``; anything else is ``Ignored``. A malformed
event of a known type is ``Ignored`` too, with why: a satellite's bad event never ends the
connection, only a stream that is no Wyoming does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wyoming.event import Event

from ...errors import AudioFormatError
from ..info import SatelliteInfo, parse_satellite_info
from .audio import PcmConverter, PcmFormat

type Stage = Literal["wake", "asr", "intent", "handle", "tts"]
STAGES: tuple[Stage, ...] = ("wake", "asr", "intent", "handle", "tts")
AUDIO_STARTS: tuple[Stage, ...] = ("wake", "asr")
"""The stages a satellite's run may start at: it sends audio, not text."""
MIC_FORMAT = PcmFormat(rate=16000, width=2, channels=1)
MAX_NAME = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequested:
    """``run-pipeline``: run Assist from ``start`` to ``end`` on the audio that follows."""

    kind: Literal["run"] = "run"
    start: Stage
    end: Stage
    wake_word_name: str | None = None
    speaker_format: PcmFormat | None = None
    """The format the satellite's speaker wants (``snd_format``, sent by newer satellites)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MicAudio:
    """Microphone audio, as 16 kHz, 16-bit mono PCM."""

    kind: Literal["audio"] = "audio"
    pcm: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class MicStopped:
    """``audio-stop``: the satellite ended the audio of its run itself."""

    kind: Literal["audio_stop"] = "audio_stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Played:
    """``played``: the satellite finished playing the audio it was sent."""

    kind: Literal["played"] = "played"


@dataclass(frozen=True, slots=True, kw_only=True)
class WakeDetected:
    """``detection``: the satellite heard its wake word (it sends ``run-pipeline`` next)."""

    kind: Literal["detection"] = "detection"
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PingAsked:
    """``ping``: the satellite checks that we are there; answer ``pong``."""

    kind: Literal["ping"] = "ping"
    text: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PongHeard:
    """``pong``: the satellite answered our ping."""

    kind: Literal["pong"] = "pong"


@dataclass(frozen=True, slots=True, kw_only=True)
class Described:
    """``info``: what the satellite says it is (None: it says it is no satellite)."""

    kind: Literal["info"] = "info"
    info: SatelliteInfo | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ignored:
    """An event that is not for us, or a malformed one: ``reason`` says which."""

    kind: Literal["ignored"] = "ignored"
    type: str
    reason: str


type SatelliteInput = (
    RunRequested
    | MicAudio
    | MicStopped
    | Played
    | WakeDetected
    | PingAsked
    | PongHeard
    | Described
    | Ignored
)


class SatelliteEvents:
    """Read one satellite connection's events; its microphone converter keeps its state."""

    def __init__(self) -> None:
        """Start with no microphone format seen."""
        self._mic: PcmConverter | None = None

    def read(self, event: Event) -> SatelliteInput:
        """Return what ``event`` says, checked; never raise for what the satellite sent."""
        data = event.data if isinstance(event.data, dict) else {}
        match event.type:
            case "audio-chunk":
                return self._audio(event, data)
            case "run-pipeline":
                return _run(data)
            case "audio-stop":
                return MicStopped()
            case "played":
                return Played()
            case "detection":
                return WakeDetected(name=_name(data.get("name")))
            case "ping":
                return PingAsked(text=_name(data.get("text")))
            case "pong":
                return PongHeard()
            case "info":
                return Described(info=parse_satellite_info(data))
            case _:
                return Ignored(type=str(event.type)[:MAX_NAME], reason="not for us")

    def _audio(self, event: Event, data: dict[str, object]) -> MicAudio | Ignored:
        """Return a chunk's audio at 16 kHz, 16-bit mono, or why it is unusable."""
        try:
            fmt = PcmFormat.checked(data.get("rate"), data.get("width"), data.get("channels"))
        except AudioFormatError as err:
            return Ignored(type=event.type, reason=str(err))
        pcm = event.payload or b""
        if len(pcm) % fmt.frame_bytes:
            return Ignored(type=event.type, reason="audio that is not whole frames")
        if self._mic is None or self._mic.source != fmt:
            self._mic = PcmConverter(fmt, MIC_FORMAT)
        return MicAudio(pcm=self._mic.convert(pcm))


def _run(data: dict[str, object]) -> RunRequested | Ignored:
    """Return a checked ``run-pipeline``, or why it cannot run."""
    start, end = _stage(data.get("start_stage")), _stage(data.get("end_stage"))
    if start not in AUDIO_STARTS or end is None:
        asked = (data.get("start_stage"), data.get("end_stage"))
        return Ignored(type="run-pipeline", reason=f"cannot run from {asked[0]!r} to {asked[1]!r}")
    assert start is not None
    if STAGES.index(end) < STAGES.index(start):
        return Ignored(type="run-pipeline", reason=f"{end!r} comes before {start!r}")
    speaker: PcmFormat | None = None
    snd = data.get("snd_format")
    if isinstance(snd, dict):
        try:
            speaker = PcmFormat.checked(snd.get("rate"), snd.get("width"), snd.get("channels"))
        except AudioFormatError:
            speaker = None  # a format nobody can play: keep the audio's own
    return RunRequested(
        start=start,
        end=end,
        wake_word_name=_name(data.get("wake_word_name")),
        speaker_format=speaker,
    )


def _stage(value: object) -> Stage | None:
    """Return the pipeline stage ``value`` names, or None."""
    return next((stage for stage in STAGES if stage == value), None)


def _name(value: object) -> str | None:
    """Return a non-empty string, cut to ``MAX_NAME``; else None."""
    return value[:MAX_NAME] if isinstance(value, str) and value else None
