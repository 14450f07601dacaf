"""Speech: Wyoming and in-process Piper TTS, one sentence at a time; Wyoming STT; satellites.

A Wyoming satellite's protocol is the ``satellite`` subpackage (its own face).
"""

from .audio_length import AudioProgress, heard_sentences, sentences_heard, spoken_seconds
from .embedded import EmbeddedPiper, LoadedPiperVoice, PiperVoiceFolder, check_piper
from .head_start import SpeechHeadStarts, SpeechKey, Synthesis, chunk_seconds
from .info import AsrInfo, AsrModel, SatelliteInfo, SatelliteWakeWord, TtsInfo, TtsVoice
from .sentence_marks import SPEECH_MARKS, SentenceMarks
from .stt import Transcription, WyomingSTT
from .synthesizer import AudioChunk, Synthesizer
from .tts import WyomingTTS
from .voice_folder import VoiceFile, list_voice_files

__all__ = [
    "SPEECH_MARKS",
    "AsrInfo",
    "AsrModel",
    "AudioChunk",
    "AudioProgress",
    "EmbeddedPiper",
    "LoadedPiperVoice",
    "PiperVoiceFolder",
    "SatelliteInfo",
    "SatelliteWakeWord",
    "SentenceMarks",
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
    "sentences_heard",
    "spoken_seconds",
]
