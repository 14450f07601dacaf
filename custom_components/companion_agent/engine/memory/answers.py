"""JSON answers from the memory model: asked with a JSON Schema, read tolerantly, validated.

The schema goes out as the OpenAI ``response_format`` (``json_schema``); a server that
refuses the field (HTTP 400) is asked again without it, and from then on never with it.
Whatever comes back is read tolerantly (code fences, text around the object, lone
surrogates) and validated, its ``format``s asserted (``ANSWER_FORMATS``); an answer that is
cut (``AnswerCutError``), not JSON or off the schema raises ``MemoryAnswerError`` (the
memory is lost, never the turn); a server that cannot be reached
(or is busy: HTTP 429, 5xx) raises ``MemoryUnavailableError`` (the write waits in the
outbox and is tried again). A stream cut after the answer began counts as a bad answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime, time
from typing import Protocol, cast

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from ..chars import valid_text
from ..errors import (
    AnswerCutError,
    LLMConnectionError,
    LLMError,
    MemoryAnswerError,
    MemoryUnavailableError,
)
from ..events import ThinkingDelta
from ..json_types import JSONObject
from ..llm.stream import LLMItem, RoundEnd
from ..messages import ChatMessage
from ..tools.contract import ToolSpec

ANSWER_TIMEOUT = 60.0
MAX_ANSWER_CHARS = 20000
ANSWER_FORMATS = FormatChecker()
"""The formats an answer's strings are held to: jsonschema's own (``date`` as
``2026-03-10``, ``email``, ``uuid`` …), and ``date-time`` and ``time`` read as ISO 8601 the
way Home Assistant's selectors read them (no time zone needed) whatever optional packages
jsonschema finds (its own checks of those two need one)."""


@ANSWER_FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    """Accept an ISO 8601 date and time (``2026-03-10T07:30``, ``2026-03-10 07:30:00+01:00``)."""
    return not isinstance(value, str) or isinstance(datetime.fromisoformat(value), datetime)


@ANSWER_FORMATS.checks("time", raises=ValueError)
def _time(value: object) -> bool:
    """Accept an ISO 8601 time of day (``07:30``, ``07:30:00``)."""
    return not isinstance(value, str) or isinstance(time.fromisoformat(value), time)


class StructuredModel(Protocol):
    """A model that can be asked for an answer in a given ``response_format``."""

    def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        response_format: Mapping[str, object] | None = None,
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; end with exactly one ``RoundEnd``."""
        ...


class JsonAnswers:
    """Ask one model for JSON answers that fit a schema."""

    def __init__(self, model: StructuredModel, *, timeout: float = ANSWER_TIMEOUT) -> None:
        """Use ``model``; each answer may take ``timeout`` seconds."""
        self._model = model
        self._timeout = timeout
        self._plain = False

    async def ask(
        self,
        messages: Sequence[ChatMessage],
        schema: JSONObject,
        *,
        name: str,
        defaults: JSONObject | None = None,
    ) -> JSONObject:
        """Return the model's answer to ``messages`` as a JSON object valid for ``schema``.

        ``defaults`` fill the keys a lenient model left out before the answer is validated.
        """
        text = ""
        for formatted in (False,) if self._plain else (True, False):
            wire = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
            try:
                text = await self._text(messages, wire if formatted else None)
                break
            except LLMError as err:
                if formatted and err.status == 400:
                    self._plain = True
                    continue
                if isinstance(err, LLMConnectionError) or (err.retryable and err.status):
                    raise MemoryUnavailableError(f"memory model: {err}") from err
                raise MemoryAnswerError(f"memory model refused: {err}") from err
        value = {**(defaults or {}), **parse_object(text)}
        try:
            Draft202012Validator(schema, format_checker=ANSWER_FORMATS).validate(value)
        except ValidationError as err:
            where = "/".join(str(part) for part in err.absolute_path)
            what = f"{where}: {err.message}" if where else err.message
            raise MemoryAnswerError(f"answer off the schema: {what}") from err
        return value

    async def _text(
        self, messages: Sequence[ChatMessage], response_format: Mapping[str, object] | None
    ) -> str:
        """Collect the streamed answer text; an error or a cut stream raises ``LLMError``."""
        parts: list[str] = []
        size = 0
        end: RoundEnd | None = None
        try:
            async with asyncio.timeout(self._timeout):
                stream = self._model.stream_with_tools(
                    messages, (), response_format=response_format
                )
                async for item in stream:
                    match item:
                        case RoundEnd():
                            end = item
                        case ThinkingDelta():
                            continue
                        case str():
                            size += len(item)
                            if size > MAX_ANSWER_CHARS:
                                raise AnswerCutError(
                                    f"the answer is longer than {MAX_ANSWER_CHARS} characters",
                                    too_long=True,
                                )
                            parts.append(item)
        except TimeoutError as err:
            raise MemoryUnavailableError("the memory model did not answer in time") from err
        if end is None:
            raise MemoryAnswerError("the answer stream ended without its end")
        if end.error is not None and size:
            raise AnswerCutError(f"the answer was cut: {end.error}") from end.error
        if end.error is not None:
            raise end.error
        if end.finish_reason == "length":
            raise AnswerCutError("the answer was cut at the model's length limit")
        return "".join(parts)


def parse_object(text: str) -> JSONObject:
    """Return the JSON object in ``text``: fences and words around it are skipped."""
    text = valid_text(text).strip()
    start = text.find("{")
    if start < 0:
        raise MemoryAnswerError("the answer holds no JSON object")
    try:
        value, _end = json.JSONDecoder().raw_decode(text, start)
    except ValueError as err:
        raise MemoryAnswerError(f"the answer is not JSON: {err}") from err
    if not isinstance(value, dict):
        raise MemoryAnswerError("the answer is not a JSON object")
    return cast(JSONObject, _valid(value))


def _valid(value: object) -> object:
    """Return ``value`` with every string made valid text (lone surrogates replaced)."""
    match value:
        case str():
            return valid_text(value)
        case list():
            return [_valid(item) for item in value]
        case dict():
            return {valid_text(str(key)): _valid(item) for key, item in value.items()}
        case _:
            return value
