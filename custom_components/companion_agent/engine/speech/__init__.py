"""Speech: Wyoming and in-process Piper TTS, one sentence at a time; Wyoming STT; satellites.

A Wyoming satellite's protocol is the ``satellite`` subpackage (its own face).
"""

from .audio_length import (
    EXACT_MARGIN,
    AudioProgress,
    heard_sentences,
    sentences_heard,
    spoken_seconds,
)
from .audio_timeline import AudioTimeline, SentenceMarks, chunk_seconds
from .containers import MP3, WAV, Container, encoded, mp3_available
from .embedded import EmbeddedPiper, LoadedPiperVoice, PiperVoiceFolder, check_piper
from .info import AsrInfo, AsrModel, SatelliteInfo, SatelliteWakeWord, TtsInfo, TtsVoice
from .synthesizer import AudioChunk, Synthesizer
from .turn_speech import SpeechTurns, Synthesis, TurnSpeech
from .voice_folder import VoiceFile, list_voice_files
from .wyoming_stt import Transcription, WyomingSTT
from .wyoming_tts import WyomingTTS

__all__ = [
    "EXACT_MARGIN",
    "MP3",
    "WAV",
    "AsrInfo",
    "AsrModel",
    "AudioChunk",
    "AudioProgress",
    "AudioTimeline",
    "Container",
    "EmbeddedPiper",
    "LoadedPiperVoice",
    "PiperVoiceFolder",
    "SatelliteInfo",
    "SatelliteWakeWord",
    "SentenceMarks",
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
    "sentences_heard",
    "spoken_seconds",
]
