"""``ChatModels``: one model per role's settings, built once; each call timed for a trace.

Every role (``roles.py``) may live on its own server; a model is built once per settings
and kept (a bounded number). Models on the host's own server report how each round ended
(``None``: the server answered) to the host's observer, so the host can follow that
server's health from real turns. ``TimedModel`` tells a listener each call's tokens and
timings (first token, total), for the host's trace of a turn or a task.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Unpack

import httpx

from ..chars import valid_text
from ..errors import LLMError
from ..messages import ChatMessage
from ..tools.contract import ToolSpec
from .adapter import LLMSettings, OpenAIChatModel
from .stream import ChatModel, LLMItem, RoundEnd, RoundOptions, ServerWaiting

type RoundObserver = Callable[[LLMError | None], None]
"""Told how each model round ended: the error, or None when the server answered."""
MAX_MODELS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model call as a trace shows it: its role and model, its tokens, how long it took.

    ``first_token_ms``: until the first text or thinking; None when none came (a round
    that only called tools, or failed).
    """

    role: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    first_token_ms: float | None
    total_ms: float
    error: str | None = None

    def as_trace(self) -> dict[str, object]:
        """Return the call as the trace's ``stats`` (token names as HA's integrations use)."""
        return {
            "role": self.role,
            "model": self.model,
            "input_tokens": self.prompt_tokens,
            "output_tokens": self.completion_tokens,
            "first_token_ms": self.first_token_ms,
            "total_ms": self.total_ms,
            **({"error": self.error} if self.error else {}),
        }


type CallListener = Callable[[ModelCall], None]


class ObservedModel:
    """A chat model whose every round's end is told to an observer (if it has one).

    ``traced`` returns it with each call also told to a listener (a turn's or a task's trace).
    """

    def __init__(
        self,
        model: OpenAIChatModel,
        observer: RoundObserver | None,
        trace: tuple[str, CallListener] | None = None,
    ) -> None:
        """Wrap ``model``; ``trace`` is the role and listener each call is told to."""
        self.settings = model.settings
        self._model = model
        self._observer = observer
        self._trace = trace

    def traced(self, role: str, listener: CallListener | None) -> ObservedModel:
        """Return this model with each call told to ``listener`` under ``role`` (None: as is)."""
        if listener is None:
            return self
        return ObservedModel(self._model, self._observer, (role, listener))

    async def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        **options: Unpack[RoundOptions],
    ) -> AsyncGenerator[LLMItem]:
        """Stream the round (asked with ``options``) unchanged, noting how it ended."""
        stream = self._model.stream_with_tools(messages, tools, **options)
        if self._trace is not None:
            role, listener = self._trace
            stream = timed(stream, role=role, name=self.settings.model, listener=listener)
        async for item in stream:
            if isinstance(item, RoundEnd) and self._observer is not None:
                self._observer(item.error)
            yield item


class ChatModels:
    """The models of every role's settings, on any server, built once each (bounded)."""

    def __init__(
        self, settings: LLMSettings, http: httpx.AsyncClient, observer: RoundObserver | None
    ) -> None:
        """Build models with ``http``; tell ``observer`` each round on ``settings``' server."""
        self.settings = settings
        self._http = http
        self._observer = observer
        self._models: OrderedDict[LLMSettings, ObservedModel] = OrderedDict()

    def bound(self, settings: LLMSettings) -> ObservedModel:
        """Return the model for ``settings`` (built on first use, kept among the last 64)."""
        model = self._models.pop(settings, None)
        if model is None:
            ours = settings.base_url.rstrip("/") == self.settings.base_url.rstrip("/")
            adapter = OpenAIChatModel(settings, http_client=self._http)
            model = ObservedModel(adapter, self._observer if ours else None)
        self._models[settings] = model
        while len(self._models) > MAX_MODELS:
            self._models.popitem(last=False)
        return model


class TimedModel:
    """A chat model whose every call is timed and told to ``listener`` under ``role``."""

    def __init__(self, model: ChatModel, *, role: str, name: str, listener: CallListener) -> None:
        """Wrap ``model`` (called ``name``)."""
        self._model = model
        self._role = role
        self._name = name
        self._listener = listener

    def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream the round unchanged; tell the listener its tokens and timings at its end."""
        stream = self._model.stream_with_tools(messages, tools)
        return timed(stream, role=self._role, name=self._name, listener=self._listener)


async def timed(
    stream: AsyncIterator[LLMItem], *, role: str, name: str, listener: CallListener
) -> AsyncIterator[LLMItem]:
    """Pass a round's items on; at its ``RoundEnd`` tell ``listener`` what the call cost."""
    started = time.perf_counter()
    first: float | None = None
    async for item in stream:
        now = time.perf_counter()
        if isinstance(item, RoundEnd):
            listener(
                ModelCall(
                    role=role,
                    model=name,
                    prompt_tokens=item.usage.get("prompt_tokens"),
                    completion_tokens=item.usage.get("completion_tokens"),
                    first_token_ms=None if first is None else round((first - started) * 1000, 1),
                    total_ms=round((now - started) * 1000, 1),
                    error=None if item.error is None else str(item.error),
                )
            )
        elif first is None and not isinstance(item, ServerWaiting):
            first = now
        yield item


async def answer_text(
    stream: AsyncIterator[LLMItem], max_chars: int
) -> tuple[str, RoundEnd | None]:
    """Collect a round's text (thinking left out, ``max_chars`` at most) and its end."""
    parts: list[str] = []
    size = 0
    end: RoundEnd | None = None
    async for item in stream:
        match item:
            case RoundEnd():
                end = item
            case str() if size < max_chars:
                parts.append(item)
                size += len(item)
    return valid_text("".join(parts))[:max_chars], end
