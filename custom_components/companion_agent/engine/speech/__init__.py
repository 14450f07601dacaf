"""Speech: Wyoming text-to-speech, one sentence at a time, and Wyoming speech-to-text."""

from .info import AsrInfo, AsrModel, TtsInfo, TtsVoice
from .stt import Transcription, WyomingSTT
from .tts import AudioChunk, WyomingTTS

__all__ = [
    "AsrInfo",
    "AsrModel",
    "AudioChunk",
    "Transcription",
    "TtsInfo",
    "TtsVoice",
    "WyomingSTT",
    "WyomingTTS",
]
