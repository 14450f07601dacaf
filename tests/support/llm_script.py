"""Scripted replies for the local OpenAI-compatible server, and its default responder."""

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Self

STREAMS = Path(__file__).parent / "streams"
DEFAULT_CHUNK_SIZE = 4
DEFAULT_DELAY = 0.005
TIME_WORDS = ("time", "date", "clock", "几点", "时间", "日期")


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of assistant text, sent as `delta.content` (after `hold` is set, if given)."""

    text: str
    delay: float = 0.0
    hold: asyncio.Event | None = None


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A piece of a tool call, sent as one entry of `delta.tool_calls`.

    The first chunk of a call carries `id` and `name`; later ones only `arguments`.
    """

    index: int
    arguments: str = ""
    id: str | None = None
    name: str | None = None
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """A piece of model reasoning, sent as `delta.<field>` (`reasoning_content` or `reasoning`)."""

    text: str
    delay: float = 0.0
    field: str = "reasoning_content"


@dataclass(frozen=True, slots=True)
class RecordedChunk:
    """One SSE event of a recorded stream, sent verbatim (`data` is JSON or `[DONE]`)."""

    data: str
    delay: float = 0.0

    @property
    def is_usage(self) -> bool:
        """Tell whether this is the trailing usage chunk (`choices: []`)."""
        try:
            value = json.loads(self.data)
        except ValueError:
            return False
        return isinstance(value, dict) and value.get("choices") == [] and "usage" in value


type Chunk = TextChunk | ToolCallChunk | ReasoningChunk | RecordedChunk


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a server answers to every request carrying `field`: HTTP `status` and `body`."""

    field: str
    status: int
    body: dict[str, object]

    @classmethod
    def recorded(cls, name: str) -> Self:
        """Load `streams/<name>.json` (see streams/README.md for where each comes from)."""
        data = json.loads((STREAMS / f"{name}.json").read_text(encoding="utf-8"))
        return cls(field=data["field"], status=data["status"], body=data["body"])


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server answers to one chat completion request."""

    chunks: tuple[Chunk, ...] = ()
    finish_reason: str | None = "stop"
    status: int = 200
    cut_after: int | None = None
    usage: dict[str, int] | None = None
    send_done: bool = True

    @classmethod
    def text(cls, text: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE, delay: float = 0.0) -> Self:
        """Build a text reply split into chunks of `chunk_size` characters."""
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        pieces = [text[at : at + chunk_size] for at in range(0, len(text), chunk_size)]
        return cls(chunks=tuple(TextChunk(piece, delay) for piece in pieces))

    @classmethod
    def held(cls, first: str, held: str, *rest: str, until: asyncio.Event) -> Self:
        """Build a text reply: ``first`` at once, ``held`` and ``rest`` once ``until`` is set."""
        after = tuple(TextChunk(text) for text in rest)
        return cls(chunks=(TextChunk(first), TextChunk(held, hold=until), *after))

    @classmethod
    def tool_calls(
        cls, *calls: tuple[str, str, str], split: int = 3, interleave: bool = True
    ) -> Self:
        """Build a reply calling tools, each `(call_id, name, arguments_json)`.

        The arguments of each call are split across `split` chunks. With `interleave`
        the chunks of different calls alternate (only `index` tells them apart);
        without it each call is streamed whole before the next, as OpenAI does.
        """
        if split < 1:
            raise ValueError("split must be at least 1")
        per_call = [
            _call_chunks(index, call_id, name, arguments, split)
            for index, (call_id, name, arguments) in enumerate(calls)
        ]
        if interleave:
            ordered = [
                chunks[step] for step in range(split) for chunks in per_call if step < len(chunks)
            ]
        else:
            ordered = [chunk for chunks in per_call for chunk in chunks]
        return cls(chunks=tuple(ordered), finish_reason="tool_calls")

    @classmethod
    def recorded(cls, name: str, *, delay: float = 0.0) -> Self:
        """Replay `streams/<name>.jsonl` verbatim, one SSE event per line."""
        lines = (STREAMS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        return cls(chunks=tuple(RecordedChunk(line, delay) for line in lines if line.strip()))

    @property
    def is_recorded(self) -> bool:
        """Tell whether this reply replays a recorded stream."""
        return any(isinstance(chunk, RecordedChunk) for chunk in self.chunks)

    @classmethod
    def error(cls, status: int) -> Self:
        """Build a reply that fails with HTTP `status` before any chunk."""
        if status < 400:
            raise ValueError("an error reply needs a status of 400 or more")
        return cls(status=status, finish_reason=None)


def _call_chunks(
    index: int, call_id: str, name: str, arguments: str, split: int
) -> list[ToolCallChunk]:
    """Split one tool call into chunks; the first carries id and name."""
    bounds = [len(arguments) * step // split for step in range(split + 1)]
    parts = [arguments[bounds[step] : bounds[step + 1]] for step in range(split)]
    chunks = [ToolCallChunk(index, parts[0], id=call_id, name=name)]
    chunks.extend(ToolCallChunk(index, part) for part in parts[1:] if part)
    return chunks


def default_reply(body: dict[str, object], sequence: int) -> Reply:
    """Answer a request nobody scripted, the way a small helpful model would.

    A tool result is summarised; a question about time or date calls an offered
    time/date tool; anything else is echoed back.
    """
    messages = [m for m in _as_list(body.get("messages")) if isinstance(m, dict)]
    last = messages[-1] if messages else {}
    user_texts = [_message_text(m) for m in messages if m.get("role") == "user"]
    user_text = user_texts[-1].strip() if user_texts else ""
    if last.get("role") == "tool":
        return Reply.text(_summary(_message_text(last), user_text), delay=DEFAULT_DELAY)
    tool = _time_tool_name(body)
    if tool is not None and any(word in user_text.lower() for word in TIME_WORDS):
        return Reply.tool_calls((f"call_default_{sequence}", tool, "{}"), split=1)
    return Reply.text(f"You said: {user_text.rstrip('.')}.", delay=DEFAULT_DELAY)


def _summary(result: str, user_text: str) -> str:
    """Say a tool result: a time result as a clock time, anything else as it is."""
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    chinese = any("\u4e00" <= char <= "\u9fff" for char in user_text)
    if isinstance(data, dict) and isinstance(data.get("time"), str):
        weekday = data.get("weekday", "")
        if chinese:
            return f"现在是{data['time']}。"
        return f"It is {data['time']} on {weekday}." if weekday else f"It is {data['time']}."
    return f"It is {result.strip().rstrip('.')}."


def _time_tool_name(body: dict[str, object]) -> str | None:
    """Return the name of the first offered tool about time or date."""
    for tool in _as_list(body.get("tools")):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and ("time" in name.lower() or "date" in name.lower()):
            return name
    return None


def _message_text(message: dict[object, object]) -> str:
    """Return the text of a message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [
        part["text"]
        for part in _as_list(content)
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return "".join(texts)


def _as_list(value: object) -> list[object]:
    """Return `value` if it is a list, else an empty list."""
    return list(value) if isinstance(value, list) else []
