"""Speech: Wyoming and in-process Piper text-to-speech, one sentence at a time; Wyoming STT."""

from .embedded import EmbeddedPiper, LoadedPiperVoice, PiperVoiceFolder, check_piper
from .info import AsrInfo, AsrModel, TtsInfo, TtsVoice
from .stt import Transcription, WyomingSTT
from .synthesizer import AudioChunk, Synthesizer
from .tts import WyomingTTS
from .voice_folder import VoiceFile, list_voice_files

__all__ = [
    "AsrInfo",
    "AsrModel",
    "AudioChunk",
    "EmbeddedPiper",
    "LoadedPiperVoice",
    "PiperVoiceFolder",
    "Synthesizer",
    "Transcription",
    "TtsInfo",
    "TtsVoice",
    "VoiceFile",
    "WyomingSTT",
    "WyomingTTS",
    "check_piper",
    "list_voice_files",
]
