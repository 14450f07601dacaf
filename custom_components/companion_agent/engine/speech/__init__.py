"""Speech: Wyoming and in-process Piper text-to-speech, one sentence at a time; Wyoming STT."""

from .audio_length import heard_sentences, spoken_seconds
from .embedded import EmbeddedPiper, LoadedPiperVoice, PiperVoiceFolder, check_piper
from .head_start import SpeechHeadStarts, SpeechKey, Synthesis, chunk_seconds
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
    "SpeechHeadStarts",
    "SpeechKey",
    "Synthesis",
    "Synthesizer",
    "Transcription",
    "TtsInfo",
    "TtsVoice",
    "VoiceFile",
    "WyomingSTT",
    "WyomingTTS",
    "check_piper",
    "chunk_seconds",
    "heard_sentences",
    "list_voice_files",
    "spoken_seconds",
]
