"""Speech: Wyoming text-to-speech and in-process Piper, one sentence at a time."""

from .embedded import EmbeddedPiper, LoadedPiperVoice, PiperVoiceFolder, check_piper
from .info import TtsInfo, TtsVoice
from .synthesizer import AudioChunk, Synthesizer
from .tts import WyomingTTS
from .voice_folder import VoiceFile, list_voice_files

__all__ = [
    "AudioChunk",
    "EmbeddedPiper",
    "LoadedPiperVoice",
    "PiperVoiceFolder",
    "Synthesizer",
    "TtsInfo",
    "TtsVoice",
    "VoiceFile",
    "WyomingTTS",
    "check_piper",
    "list_voice_files",
]
