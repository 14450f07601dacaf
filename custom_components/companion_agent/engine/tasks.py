"""AI tasks: one answer from a model, as text or as JSON that fits a schema, images included.

A host (HA's ``ai_task``) asks with instructions, maybe images and a JSON Schema; the task's
roles say which model answers. A task that carries the host's tools (``TaskTools``) runs
the turns' own tool loop first, every call through the same guard as a conversation's
(held calls wait for an approval from outside, as the dashboard gives), then answers.
Images go to the chat model if it sees images, else to the vision model; with neither
they are refused. A structured answer is asked for with the schema as ``response_format``
(plain, for a server that refuses it), read tolerantly and validated, formats included
(``JsonAnswers``); the host applies its own checks after. An answer is never shortened: one
the model's length limit cut (``finish_reason: length``) or one longer than
``MAX_TEXT_CHARS`` is a ``TaskError`` that says so. Each call's tokens and timings go to the
host's listener.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass

from .chars import valid_text
from .errors import AnswerCutError, LLMError, MemoryAnswerError, MemoryUnavailableError, TaskError
from .guard.executor import Guard
from .guard.policy import StateProbe, TargetResolver
from .json_types import JSONObject, JSONValue
from .llm import LLMSettings
from .llm.adapter import CallListener, ChatModels, ObservedModel
from .llm.roles import ModelChoice, RoleChoices, persona_models
from .llm.stream import RoundEnd
from .memory.answers import JsonAnswers
from .messages import AssistantMessage, ChatMessage, ImagePart, SystemMessage, UserMessage
from .tools.contract import ToolContext
from .tools.registry import Tool, ToolRegistry
from .turn.loop import SpokenLines, ToolLoop, TurnRecord

TASK_TIMEOUT = 120.0
MAX_TEXT_CHARS = 20000
"""The longest text answer a task returns; a longer one is an error, never cut short."""
MAX_TASK_ROUNDS = 5
STRUCTURE_PROMPT = "Now give the result in the requested structure."
QUIET = SpokenLines(
    unreachable="",
    cut="",
    rounds="",
    deadline="",
    busy="",
    slow="",
    voice_refused="",
    disowned="",
    nothing_disowned="",
)
"""A task has nobody to speak to: how a round failed is raised, not said."""
TASK_PROMPT = (
    "You carry out tasks for a Home Assistant automation. Do what the instructions ask and "
    "answer with the result only, no preamble."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRequest:
    """One task: its name, instructions, images, the schema of a structured answer, models."""

    name: str
    instructions: str
    roles: RoleChoices
    images: tuple[ImagePart, ...] = ()
    schema: JSONObject | None = None
    """A JSON Schema the answer must fit; None: a text answer."""
    system: str = TASK_PROMPT
    on_model_call: CallListener | None = None
    tools: TaskTools | None = None
    """The host's tools the task may call; None: it acts on nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTools:
    """The house a task may act on: its tools, who asks, what the calls would touch."""

    tools: Sequence[Tool]
    context: ToolContext
    resolver: TargetResolver | None = None
    state: StateProbe | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskResult:
    """The answer: its text, and its data (the JSON object, or the text), and who gave it."""

    text: str
    data: JSONValue
    model: str


class TaskRunner:
    """Answer tasks with the models of each task's roles (on the host's server by default)."""

    def __init__(self, base: LLMSettings, models: ChatModels, guard: Guard) -> None:
        """Use ``models`` for every role; ``base`` is the host's own model; ``guard`` rules."""
        self._base = base
        self._models = models
        self._guard = guard

    async def run(self, request: TaskRequest) -> TaskResult:
        """Answer ``request``; raise ``TaskError`` when no model can, or the answer is unusable."""
        settings = self._settings(request)
        model = self._models.bound(settings).traced("task", request.on_model_call)
        messages: list[ChatMessage] = [
            SystemMessage(content=request.system),
            UserMessage(content=request.instructions, images=request.images),
        ]
        if request.tools is not None and request.tools.tools:
            record = await self._act(model, messages, request.tools)
            messages.extend(record.messages)
            if request.schema is None:
                text = _last_answer(record)
                return TaskResult(text=text, data=text, model=settings.model)
            messages.append(UserMessage(content=STRUCTURE_PROMPT))
        if request.schema is not None:
            data = await _structured(model, messages, request.schema, request.name)
            return TaskResult(text="", data=data, model=settings.model)
        text = await _text(model, messages)
        return TaskResult(text=text, data=text, model=settings.model)

    async def _act(
        self, model: ObservedModel, messages: Sequence[ChatMessage], house: TaskTools
    ) -> TurnRecord:
        """Run the tool loop with the host's tools behind the guard; return what it did."""
        executor = self._guard.executor(
            ToolRegistry(house.tools), (), resolver=house.resolver, state=house.state
        )
        core = ToolLoop(model, executor, QUIET, max_rounds=MAX_TASK_ROUNDS)
        record = TurnRecord()
        try:
            async with asyncio.timeout(TASK_TIMEOUT):
                async for _item in core.run_turn(messages, house.context, record):
                    pass
        except TimeoutError as err:
            raise TaskError("the model did not finish in time", reason="unreachable") from err
        if record.outcome == "cut":
            raise TaskError(f"the answer was cut: {record.reason}", reason="cut")
        if record.outcome != "complete":
            raise TaskError(f"the model failed: {record.reason}", reason="unreachable")
        return record

    def _settings(self, request: TaskRequest) -> LLMSettings:
        """Return the model that answers: one that sees images when the task has some."""
        models = persona_models(self._base, request.roles, ModelChoice())
        if not request.images:
            return models.chat
        if models.chat_sees_images:
            return models.chat
        if models.vision is None:
            raise TaskError(
                "the task has images, but its model does not see images and it has no vision model",
                reason="no_vision",
            )
        return models.vision


async def _structured(
    model: ObservedModel, messages: Sequence[ChatMessage], schema: JSONObject, name: str
) -> JSONObject:
    """Ask for a JSON object that fits ``schema``."""
    answers = JsonAnswers(model, timeout=TASK_TIMEOUT)
    try:
        return await answers.ask(messages, schema, name=_schema_name(name))
    except MemoryUnavailableError as err:
        raise TaskError(f"the model did not answer: {err}", reason="unreachable") from err
    except AnswerCutError as err:
        raise TaskError(str(err), reason="too_long" if err.too_long else "cut") from err
    except MemoryAnswerError as err:
        raise TaskError(str(err), reason="bad_answer") from err
    except LLMError as err:
        raise TaskError(f"the model failed: {err}", reason="unreachable") from err


async def _text(model: ObservedModel, messages: Sequence[ChatMessage]) -> str:
    """Collect a whole text answer (thinking left out), bounded in time and length."""
    parts: list[str] = []
    size = 0
    end: RoundEnd | None = None
    try:
        async with (
            asyncio.timeout(TASK_TIMEOUT),
            aclosing(model.stream_with_tools(messages, ())) as stream,
        ):
            async for item in stream:
                match item:
                    case RoundEnd():
                        end = item
                    case str():
                        size += len(item)
                        if size > MAX_TEXT_CHARS:
                            raise _too_long()
                        parts.append(item)
    except TimeoutError as err:
        raise TaskError("the model did not finish in time", reason="unreachable") from err
    if end is None or end.error is not None:
        reason = "the stream ended early" if end is None else str(end.error)
        if size:
            raise TaskError(f"the answer was cut: {reason}", reason="cut")
        raise TaskError(f"the model failed: {reason}", reason="unreachable")
    return _whole(valid_text("".join(parts)), end.finish_reason)


def _last_answer(record: TurnRecord) -> str:
    """Return what the model said after its last tool round, whole."""
    answers = [m.content for m in record.messages if isinstance(m, AssistantMessage)]
    text = answers[-1] if answers else ""
    if len(text) > MAX_TEXT_CHARS:
        raise _too_long()
    return _whole(text, record.finish_reason)


def _whole(text: str, finish_reason: str | None) -> str:
    """Return an answer stripped, or raise when the model's length limit cut it."""
    if finish_reason == "length":
        raise TaskError(
            f"the answer was cut at the model's length limit after {len(text)} characters",
            reason="cut",
        )
    return text.strip()


def _too_long() -> TaskError:
    """Return the error of an answer longer than a task's answer may be."""
    return TaskError(f"the answer is longer than {MAX_TEXT_CHARS} characters", reason="too_long")


def _schema_name(name: str) -> str:
    """Return a task's name as a schema name servers accept (letters, digits, _ and -)."""
    cleaned = "".join(char if char.isascii() and char.isalnum() else "_" for char in name)
    return cleaned.strip("_")[:64] or "answer"
