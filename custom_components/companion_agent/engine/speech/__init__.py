"""Speech: Wyoming text-to-speech, one sentence at a time."""

from .info import TtsInfo, TtsVoice
from .tts import AudioChunk, WyomingTTS

__all__ = ["AudioChunk", "TtsInfo", "TtsVoice", "WyomingTTS"]
