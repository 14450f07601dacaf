"""The engine's error hierarchy: one root, subclasses that carry fields."""

from __future__ import annotations

from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Literal

type CorruptionReporter = Callable[[Path, Path], None]
"""Called with a file's path and where its unusable content was moved aside."""


class CompanionError(Exception):
    """Root of every error the engine raises on purpose."""


class LLMError(CompanionError):
    """The model server failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class LLMConnectionError(LLMError):
    """The model server could not be reached or timed out."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, retryable=True, status=status)


class LLMBusyError(LLMError):
    """The model server took the request but is busy: no first token in time, or 429/503.

    Not the same as ``LLMConnectionError`` (no answer at all): the server is there and
    slow (a queue of turns, a local model loading), so the person is told it is slow.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, retryable=True, status=status)


class LLMAuthError(LLMError):
    """The model server rejected the credentials."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, retryable=False, status=status)


class ToolError(CompanionError):
    """A tool call failed; the model sees ``category`` and ``retryable``."""

    category: str = "execution"
    retryable: bool = False


class ToolValidationError(ToolError):
    """The model's arguments do not fit the tool's contract: fix them and call again."""

    category = "validation"


class ToolExecutionError(ToolError):
    """The tool ran and the action failed (business failure)."""

    category = "execution"


class ToolDependencyError(ToolError):
    """A dependency of the tool timed out or could not be reached; retryable."""

    category = "dependency"
    retryable = True


class ConfigFileError(CompanionError):
    """A plugin.toml or profile file is wrong; ``path`` and ``key`` say where."""

    def __init__(self, path: str | PathLike[str], key: str, message: str) -> None:
        """Name the file, the dotted key in it and what is wrong."""
        super().__init__(f"{path}: {key}: {message}")
        self.path = Path(path)
        self.key = key
        self.message = message


class PluginConfigError(ConfigFileError):
    """A plugin's plugin.toml, its code or a profile's override for it is wrong."""


class ProfileConfigError(ConfigFileError):
    """A profile file is wrong."""


class ToolContractError(CompanionError, ValueError):
    """A tool's contract is malformed (bad JSON Schema, duplicate id): a programming error."""


class ConfirmationRefusedError(CompanionError):
    """A confirmation was refused; ``reason`` says why, ``token_ref`` is the hashed token."""

    def __init__(self, message: str, *, reason: str, token_ref: str) -> None:
        """Say why and which token (hashed), never the token itself."""
        super().__init__(message)
        self.reason = reason
        self.token_ref = token_ref


class SpeechError(CompanionError):
    """A speech server failed; ``host`` and ``port`` say which one."""

    def __init__(self, message: str, *, host: str, port: int) -> None:
        """Say what failed and on which server."""
        super().__init__(f"{host}:{port}: {message}")
        self.host = host
        self.port = port


class SpeechConnectionError(SpeechError):
    """The speech server could not be reached (refused, unreachable, or too slow to accept)."""


class SpeechVoiceNotFoundError(SpeechError):
    """The TTS server does not have ``voice``, though it may advertise it."""

    def __init__(self, message: str, *, host: str, port: int, voice: str) -> None:
        """Name the voice the server refused."""
        super().__init__(message, host=host, port=port)
        self.voice = voice


class SpeechTranscribeError(SpeechError):
    """The STT server took the audio but gave no transcript: it closed, stalled or refused."""


class SatelliteError(SpeechError):
    """A Wyoming satellite failed: unreachable, gone, too slow, or it sent what is no event."""


class NotASatelliteError(SatelliteError):
    """The Wyoming server answered, but it is no satellite (a TTS or STT server, say)."""


class AudioFormatError(CompanionError):
    """Audio is not what it claims (no PCM WAV header, a format no speaker can play), or
    cannot go out in the container asked for (no MP3 encoder, an odd sample width)."""


class AudioDecoderError(AudioFormatError):
    """Media that is not WAV could not be decoded: no ffmpeg, or ffmpeg failed on it."""


class VoiceFileError(CompanionError):
    """The local voice ``voice`` (model ``path``) is missing, unreadable or not a Piper voice."""

    def __init__(self, message: str, *, voice: str, path: str | PathLike[str]) -> None:
        """Name the voice and its model file."""
        super().__init__(f"{path}: {message}")
        self.voice = voice
        self.path = Path(path)


class VoiceModelError(CompanionError):
    """The speaker encoder's weights at ``path`` are missing, damaged or of the wrong shape."""

    def __init__(self, message: str, *, path: str | PathLike[str]) -> None:
        """Name the weights file and what is wrong with it."""
        super().__init__(f"{path}: {message}")
        self.path = Path(path)


class VoiceprintFileError(CompanionError):
    """The household's voiceprint file at ``path`` could not be written."""

    def __init__(self, message: str, *, path: str | PathLike[str]) -> None:
        """Name the voiceprint file and what failed."""
        super().__init__(f"{path}: {message}")
        self.path = Path(path)


class SpeechEngineMissingError(CompanionError):
    """The in-process speech engine (piper-tts) cannot be imported on this machine."""


class MemoryStoreError(CompanionError):
    """A memory store failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        """Say what failed and whether a retry may help."""
        super().__init__(message)
        self.retryable = retryable


class MemoryInputError(MemoryStoreError):
    """A memory call was malformed (empty text, a state without a topic, too many records)."""

    def __init__(self, message: str) -> None:
        """Say what was wrong with the input."""
        super().__init__(message, retryable=False)


class EmbeddingError(MemoryStoreError):
    """The embedding server failed or answered something that is not a vector per text."""


type MemoryBackendProblem = Literal[
    "cannot_connect", "auth", "missing_dependency", "invalid_config", "in_use", "failed"
]


class MemoryBackendError(MemoryStoreError):
    """A memory backend with a server or a library of its own (mem0, Neo4j) failed.

    ``backend`` names it; ``problem`` says how: ``cannot_connect`` (unreachable, refused or
    too slow: retryable), ``auth`` (credentials refused), ``missing_dependency`` (its Python
    package is not installed), ``invalid_config`` (a bad address, a collection of another
    vector size), ``in_use`` (its local files are held by another client), ``failed``
    (the server refused the operation).
    """

    def __init__(self, message: str, *, backend: str, problem: MemoryBackendProblem) -> None:
        """Say which backend failed, how, and what happened."""
        super().__init__(f"{backend}: {message}", retryable=problem == "cannot_connect")
        self.backend = backend
        self.problem = problem


class MemoryUnavailableError(CompanionError):
    """A memory backend (or the memory model) cannot be reached now; try again later."""


class MemoryAnswerError(CompanionError):
    """The memory model's answer was unusable (cut, not JSON, off the schema)."""


class AnswerCutError(MemoryAnswerError):
    """The answer did not end: it reached the model's length limit, ran past the longest
    answer taken (``too_long``), or its stream broke off after it began."""

    def __init__(self, message: str, *, too_long: bool = False) -> None:
        """Say how the answer was cut."""
        super().__init__(message)
        self.too_long = too_long


class VisionError(ToolError):
    """A camera's snapshot, or its description, could not be had in time; try again later.

    Not retried within the call (a voice turn cannot wait three times for a camera).
    """

    category = "dependency"
    retryable = True


class ImageRefusedError(ToolError):
    """An image is not one the companion takes: not an image, an unknown type, too large."""

    category = "execution"

    def __init__(self, message: str, *, source: str) -> None:
        """Say what was refused and where the image came from."""
        super().__init__(message)
        self.source = source


type TaskProblem = Literal["no_vision", "unreachable", "bad_answer", "cut", "too_long"]
"""Why a task has no answer: no model sees its images; none answered; the answer does not
fit the structure; the answer was cut (the model's length limit, a broken stream); it is
longer than a task's answer may be."""


class TaskError(CompanionError):
    """An AI task got no usable answer: no model sees its images, none answered, or badly."""

    def __init__(self, message: str, *, reason: TaskProblem) -> None:
        """Say what went wrong and which kind of problem it is."""
        super().__init__(message)
        self.reason = reason
