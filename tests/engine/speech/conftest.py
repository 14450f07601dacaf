"""The real wyoming-piper and wyoming-faster-whisper fixtures, shared with tests/ha."""

from tests.support.piper import PiperPeer, piper, piper_process, proxy
from tests.support.whisper import WhisperPeer, whisper, whisper_process

__all__ = [
    "PiperPeer",
    "WhisperPeer",
    "piper",
    "piper_process",
    "proxy",
    "whisper",
    "whisper_process",
]
