"""Speech: Wyoming and in-process Piper text-to-speech, one sentence at a time; Wyoming STT."""

from .audio_length import EXACT_MARGIN, heard_sentences, spoken_seconds
from .containers import MP3, WAV, Container, encoded, mp3_available
from .embedded import EmbeddedPiper, LoadedPiperVoice, PiperVoiceFolder, check_piper
from .info import AsrInfo, AsrModel, TtsInfo, TtsVoice
from .stt import Transcription, WyomingSTT
from .synthesizer import AudioChunk, Synthesizer
from .timeline import AudioTimeline, chunk_seconds
from .tts import WyomingTTS
from .turn_speech import SpeechTurns, Synthesis, TurnSpeech
from .voice_folder import VoiceFile, list_voice_files

__all__ = [
    "EXACT_MARGIN",
    "MP3",
    "WAV",
    "AsrInfo",
    "AsrModel",
    "AudioChunk",
    "AudioTimeline",
    "Container",
    "EmbeddedPiper",
    "LoadedPiperVoice",
    "PiperVoiceFolder",
    "SpeechTurns",
    "Synthesis",
    "Synthesizer",
    "Transcription",
    "TtsInfo",
    "TtsVoice",
    "TurnSpeech",
    "VoiceFile",
    "WyomingSTT",
    "WyomingTTS",
    "check_piper",
    "chunk_seconds",
    "encoded",
    "heard_sentences",
    "list_voice_files",
    "mp3_available",
    "spoken_seconds",
]
