"""The model adapter: one client for every OpenAI-compatible server, vendor quirks normalised."""

from ..retry import NO_RETRY
from .adapter import MODEL_RETRY, LLMSettings, OpenAIChatModel
from .stream import ChatModel, LLMItem, PartialToolCall, RoundEnd, ServerWaiting
from .wire import map_error, to_wire

__all__ = [
    "MODEL_RETRY",
    "NO_RETRY",
    "ChatModel",
    "LLMItem",
    "LLMSettings",
    "OpenAIChatModel",
    "PartialToolCall",
    "RoundEnd",
    "ServerWaiting",
    "map_error",
    "to_wire",
]
