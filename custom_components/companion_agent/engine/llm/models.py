"""``ChatModels``: one server's chat models by name, each round's outcome told to the host.

A profile may name another model on the host's server; every model built here reports how
each of its rounds ended (``None``: the server answered) to the host's observer, so the
host can follow the server's health from real turns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace

import httpx

from ..errors import LLMError
from ..messages import ChatMessage
from ..tools.contract import ToolSpec
from .adapter import LLMSettings, OpenAIChatModel
from .stream import ChatModel, LLMItem, RoundEnd

type RoundObserver = Callable[[LLMError | None], None]
"""Told how each model round ended: the error, or None when the server answered."""


class ObservedModel:
    """A chat model whose every round's end is told to an observer."""

    def __init__(self, model: ChatModel, observer: RoundObserver) -> None:
        """Wrap ``model``."""
        self._model = model
        self._observer = observer

    async def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream the round unchanged, noting how it ended."""
        async for item in self._model.stream_with_tools(messages, tools):
            if isinstance(item, RoundEnd):
                self._observer(item.error)
            yield item


class ChatModels:
    """The host's model and the others a profile names on the same server, built once each."""

    def __init__(
        self, settings: LLMSettings, http: httpx.AsyncClient, observer: RoundObserver | None
    ) -> None:
        """Build models on ``settings``' server with ``http``; tell ``observer`` each round."""
        self.settings = settings
        self._http = http
        self._observer = observer
        self._models: dict[str, ChatModel] = {}

    def named(self, name: str | None) -> ChatModel:
        """Return the model called ``name`` (None: the host's own) on the host's server."""
        name = name or self.settings.model
        if name not in self._models:
            model: ChatModel = OpenAIChatModel(
                replace(self.settings, model=name), http_client=self._http
            )
            if self._observer is not None:
                model = ObservedModel(model, self._observer)
            self._models[name] = model
        return self._models[name]
