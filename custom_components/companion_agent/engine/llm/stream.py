"""What one model response is made of, and how streamed tool-call fragments are joined."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict

from ..chars import valid_text
from ..errors import LLMError
from ..events import ThinkingDelta
from ..messages import ChatMessage, ToolCallRequest
from ..tools.contract import ToolSpec
from .arguments import repair_arguments


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialToolCall:
    """A tool call the stream cut off before its arguments were complete."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundEnd:
    """The end of one model response: its tool calls, finish reason and usage."""

    kind: Literal["round_end"] = "round_end"
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cut_tool_calls: tuple[PartialToolCall, ...] = ()
    error: LLMError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerWaiting:
    """The server is there and busy: it has the request and no token came yet, or said 429/503.

    Yielded at most once a round, before any text: the tool loop may say a holding line
    ("One moment, please.") so a voice turn is not silent while a model loads or queues.
    """

    kind: Literal["server_waiting"] = "server_waiting"
    status: int | None = None
    """The busy answer (429, 503) when there was one; None: it took the request, silent."""


type LLMItem = str | ThinkingDelta | ServerWaiting | RoundEnd


class RoundOptions(TypedDict, total=False):
    """What a round may ask of the server beyond messages and tools, each optional."""

    response_format: Mapping[str, object] | None
    """Sent as it is: a JSON Schema answer, for memory extraction and AI tasks."""


class ChatModel(Protocol):
    """What the tool loop needs from a model."""

    def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; end with exactly one ``RoundEnd``."""
        ...


@dataclass(slots=True)
class _CallBuffer:
    """Fragments of one streamed tool call."""

    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ToolCallAccumulator:
    """Join streamed tool-call fragments into complete calls, in call order."""

    def __init__(self) -> None:
        """Start with no calls."""
        self._calls: dict[int, _CallBuffer] = {}
        self._by_id: dict[str, int] = {}
        self._invented: str | None = None

    def add(self, index: int | None, call_id: str | None, name: str | None, args: str) -> None:
        """Add one fragment; servers without an index are keyed by id, then by arrival."""
        if index is None:
            if call_id and call_id in self._by_id:
                index = self._by_id[call_id]
            elif call_id or not self._calls:
                index = max(self._calls, default=-1) + 1
            else:
                index = max(self._calls)
        buffer = self._calls.setdefault(index, _CallBuffer())
        if call_id and not buffer.call_id:
            buffer.call_id = call_id
            self._by_id[call_id] = index
        if name and not buffer.name:
            buffer.name = name
        if args:
            buffer.arguments.append(args)

    def __bool__(self) -> bool:
        """Return True when any call has started."""
        return bool(self._calls)

    def complete(self) -> tuple[ToolCallRequest, ...]:
        """Return the calls in index order, inventing ids a server left out.

        Arguments are made valid text once joined (a model may send lone surrogates) and
        repaired where a small model broke them in a common way (``repair_arguments``).
        """
        return tuple(
            ToolCallRequest(
                call_id=call_id, name=name, arguments=repair_arguments(valid_text(arguments))
            )
            for call_id, name, arguments in self._joined()
        )

    def partial(self) -> tuple[PartialToolCall, ...]:
        """Return every started call as cut off, its arguments as they came."""
        return tuple(
            PartialToolCall(call_id=call_id, name=name, arguments=valid_text(arguments))
            for call_id, name, arguments in self._joined()
        )

    def _joined(self) -> list[tuple[str, str, str]]:
        """Return (id, name, arguments) of each call in index order; ids never collide."""
        if self._invented is None:
            self._invented = secrets.token_hex(4)
        return [
            (buf.call_id or f"call_{index}_{self._invented}", buf.name, "".join(buf.arguments))
            for index, buf in sorted(self._calls.items())
        ]
