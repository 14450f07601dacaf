"""A Wyoming satellite's side of the protocol, with no Home Assistant in it.

``link``: one connection, every read bounded, every write timed; ``describe_satellite``.
``events``: what a satellite says, as typed inputs checked at the boundary. ``mirror``:
what it is told while a pipeline runs, and what ends the stream of one that woke itself.
``audio``: streamed WAV unwrapped, PCM framed, converted, read ahead. ``speaker``: audio
paced to real time, so that what was sent is what was heard.
"""

from .audio import PcmConverter, PcmFormat, PcmFramer, ReadAhead, parse_wav_header, unwrap_wav
from .events import (
    AUDIO_STARTS,
    MIC_FORMAT,
    Described,
    Ignored,
    MicAudio,
    MicStopped,
    PingAsked,
    Played,
    PongHeard,
    RunRequested,
    SatelliteEvents,
    SatelliteInput,
    Stage,
    WakeDetected,
)
from .link import SatelliteLink, describe_satellite
from .mirror import mirror_pipeline_event, release_event
from .speaker import LEAD_SECONDS, PLAYED_MARGIN, SatelliteSpeaker, Send

__all__ = [
    "AUDIO_STARTS",
    "LEAD_SECONDS",
    "MIC_FORMAT",
    "PLAYED_MARGIN",
    "Described",
    "Ignored",
    "MicAudio",
    "MicStopped",
    "PcmConverter",
    "PcmFormat",
    "PcmFramer",
    "PingAsked",
    "Played",
    "PongHeard",
    "ReadAhead",
    "RunRequested",
    "SatelliteEvents",
    "SatelliteInput",
    "SatelliteLink",
    "SatelliteSpeaker",
    "Send",
    "Stage",
    "WakeDetected",
    "describe_satellite",
    "mirror_pipeline_event",
    "parse_wav_header",
    "release_event",
    "unwrap_wav",
]
