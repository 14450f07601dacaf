"""The engine's error hierarchy: one root, subclasses that carry fields."""

from __future__ import annotations


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


class StorageError(CompanionError):
    """Conversation storage could not be read or written."""
