"""Chat messages as the engine sees them, their images, and a user message's reference text.

``llm/wire.py`` converts the messages to the wire format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePart:
    """An image for the model: its bytes (never in a repr), type and where it came from.

    Images live only in the messages of the turn that took them: stored turns, memory and
    the audit log keep the ``placeholder`` (or a description), never the bytes.
    """

    mime_type: str
    data: bytes = field(repr=False)
    source: str

    @property
    def placeholder(self) -> str:
        """Return the text that stands for the image wherever it is not kept."""
        return f"[image from {self.source}]"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRequest:
    """A complete tool call the model asked for; ``arguments`` is the raw JSON text.

    ``secret`` names the arguments the tool's contract marks secret: their values reach
    the tool and nothing else (events, the ChatLog, history, the audit log show ``***``).
    """

    call_id: str
    name: str
    arguments: str
    secret: frozenset[str] = field(default=frozenset(), compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemMessage:
    """Instructions: the persona and the output format. Never transient data."""

    role: Literal["system"] = "system"
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """What the person said, with any reference data the hooks added (and images to see)."""

    role: Literal["user"] = "user"
    content: str
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """What the model answered in one round, and the tools it called."""

    role: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolMessage:
    """A tool's result, sent back to the model under the call's id, with any images it took."""

    role: Literal["tool"] = "tool"
    call_id: str
    content: str
    images: tuple[ImagePart, ...] = ()


type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSnippet:
    """One piece of reference text for the user message and where it came from.

    ``source`` is a plugin's id, or the engine's own (``confirmations``, ``input``).
    """

    source: str
    text: str
