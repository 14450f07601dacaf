"""The model adapter: one client for every OpenAI-compatible server, vendor quirks normalised."""

from .adapter import LLMSettings, OpenAIChatModel
from .stream import ChatModel, LLMItem, PartialToolCall, RoundEnd
from .wire import map_error, to_wire

__all__ = [
    "ChatModel",
    "LLMItem",
    "LLMSettings",
    "OpenAIChatModel",
    "PartialToolCall",
    "RoundEnd",
    "map_error",
    "to_wire",
]
