"""``AgentCore.run_turn``: the streaming, bounded, concurrent tool-calling loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from .errors import LLMError
from .events import ThinkingDelta, ToolCallEvent, ToolStatus, TurnItem, TurnResult
from .llm import ChatModel, PartialToolCall, RoundEnd
from .messages import AssistantMessage, ChatMessage, ToolCallRequest, ToolMessage
from .tools.contract import ToolContext, ToolOutcome, ToolSpec, parse_arguments
from .tools.registry import ToolExecutor, failure

LOGGER = logging.getLogger(__name__)

DEFAULT_MAX_ROUNDS = 6
TOOL_CALL_CEILING = 120.0

_APOLOGIES: dict[str, dict[str, str]] = {
    "unreachable": {
        "en": "Sorry, I can't reach my language model right now. Please try again in a moment.",
        "zh": "抱歉，我现在连不上语言模型，请稍后再试。",
    },
    "cut": {
        "en": "Sorry, I lost my connection to the language model.",
        "zh": "抱歉，我和语言模型的连接断了。",
    },
    "rounds": {
        "en": "Sorry, that took more steps than I'm allowed, so I stopped.",
        "zh": "抱歉，这件事需要的步骤太多，我先停下了。",
    },
}


def apology(reason: str, language: str) -> str:
    """Return the plain-language apology for ``reason`` in the closest language."""
    texts = _APOLOGIES[reason]
    return texts.get(language.split("-", maxsplit=1)[0].lower(), texts["en"])


@dataclass(frozen=True, slots=True, kw_only=True)
class _Prepared:
    """A tool call, and whether it looks runnable (a known tool, JSON arguments)."""

    call: ToolCallRequest
    runnable: bool


class AgentCore:
    """Run turns: stream text the moment it arrives, run tools, loop a bounded number of times."""

    def __init__(
        self,
        model: ChatModel,
        tools: ToolExecutor,
        *,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        tool_ceiling: float = TOOL_CALL_CEILING,
    ) -> None:
        """Bind the model and the tools; ``max_rounds`` bounds model calls per turn."""
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self._model = model
        self._tools = tools
        self._max_rounds = max_rounds
        self._tool_ceiling = tool_ceiling

    async def run_turn(
        self, messages: Sequence[ChatMessage], ctx: ToolContext
    ) -> AsyncIterator[TurnItem]:
        """Yield text tokens, thinking and tool events; end with one ``TurnResult``."""
        history = list(messages)
        specs = self._tools.specs()
        spoken: list[str] = []
        events: list[ToolCallEvent] = []
        usage: dict[str, int] = {}
        rounds = 0
        for rounds in range(1, self._max_rounds + 1):  # noqa: B007 - rounds is reported
            round_text: list[str] = []
            end = RoundEnd(error=LLMError("the stream ended without an end", retryable=False))
            async for item in self._model.stream_with_tools(history, specs):
                match item:
                    case str():
                        if not round_text and spoken and not spoken[-1][-1:].isspace():
                            spoken.append("\n")
                            yield "\n"
                        round_text.append(item)
                        spoken.append(item)
                        yield item
                    case ThinkingDelta():
                        yield item
                    case RoundEnd():
                        end = item
            for key, value in end.usage.items():
                usage[key] = usage.get(key, 0) + value
            text = "".join(round_text)
            if end.error is not None and end.cut_tool_calls:
                history.append(_cut_assistant(text, end.cut_tool_calls))
                for cut in end.cut_tool_calls:
                    event, message = _cut_call_report(cut)
                    events.append(event)
                    history.append(message)
                    yield event
                continue
            if end.error is not None:
                notice = apology("cut" if spoken else "unreachable", ctx.language)
                async for item in _say(notice, spoken):
                    yield item
                break
            if not end.tool_calls:
                break
            history.append(AssistantMessage(content=text, tool_calls=end.tool_calls))
            async for event in self._run_tools(end.tool_calls, specs, ctx, history):
                events.append(event)
                yield event
        else:
            async for item in _say(apology("rounds", ctx.language), spoken):
                yield item
        yield TurnResult(text="".join(spoken), tool_calls=tuple(events), rounds=rounds, usage=usage)

    async def _run_tools(
        self,
        calls: Sequence[ToolCallRequest],
        specs: Sequence[ToolSpec],
        ctx: ToolContext,
        history: list[ChatMessage],
    ) -> AsyncIterator[ToolCallEvent]:
        """Run one round's calls concurrently; report each as it ends; answer in call order."""
        names = {spec.name for spec in specs}
        prepared = [_prepare(call, names) for call in calls]
        outcomes: dict[str, ToolOutcome] = {}
        tasks: dict[asyncio.Task[ToolOutcome], _Prepared] = {}
        for item in prepared:
            if item.runnable:
                yield _event(item, None)
        for item in prepared:
            tasks[asyncio.create_task(self._execute(item.call, ctx))] = item
        try:
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: prepared.index(tasks[t])):
                    outcome = task.result()
                    outcomes[tasks[task].call.call_id] = outcome
                    yield _event(tasks[task], outcome)
        finally:
            for task in tasks:
                task.cancel()
        for item in prepared:
            history.append(
                ToolMessage(call_id=item.call.call_id, content=outcomes[item.call.call_id].content)
            )

    async def _execute(self, call: ToolCallRequest, ctx: ToolContext) -> ToolOutcome:
        """Run one call under the ceiling; an executor that raises becomes a failure."""
        try:
            async with asyncio.timeout(self._tool_ceiling):
                return await self._tools.execute(call, ctx)
        except TimeoutError:
            return failure("dependency", f"{call.name} timed out", retryable=True)
        except Exception as err:
            LOGGER.warning("Tool executor failed for %s", call.name, exc_info=True)
            return failure("execution", f"{call.name} failed: {type(err).__name__}")


def _prepare(call: ToolCallRequest, names: set[str]) -> _Prepared:
    """Mark calls to unknown tools or with non-JSON arguments: they get no ``running`` event.

    They still go to the executor, which refuses them, says why, and audits the attempt.
    """
    runnable = call.name in names and parse_arguments(call.arguments) is not None
    return _Prepared(call=call, runnable=runnable)


def _event(item: _Prepared, outcome: ToolOutcome | None) -> ToolCallEvent:
    """Build the event for a call: running, or its final status."""
    status: ToolStatus
    match outcome:
        case None:
            status = "running"
        case _ if outcome.kind == "success":
            status = "completed"
        case _ if outcome.kind == "pending":
            status = "pending_confirmation"
        case _:
            status = "error"
    args = parse_arguments(item.call.arguments) or {}
    return ToolCallEvent(
        tool_id=item.call.call_id,
        tool_name=item.call.name,
        args=args,
        status=status,
        result=None if outcome is None else outcome.content,
    )


def _cut_assistant(text: str, cut: Sequence[PartialToolCall]) -> AssistantMessage:
    """Record the cut response so the model sees which calls never ran."""
    calls = tuple(
        ToolCallRequest(call_id=c.call_id, name=c.name or "unknown", arguments="{}") for c in cut
    )
    return AssistantMessage(content=text, tool_calls=calls)


def _cut_call_report(cut: PartialToolCall) -> tuple[ToolCallEvent, ToolMessage]:
    """Tell the model and the listeners that a cut call was not executed."""
    content = failure(
        "dependency",
        f"the call to {cut.name or 'a tool'} was cut off mid-stream and was not run; "
        "call it again if it is still needed",
        retryable=True,
    ).content
    event = ToolCallEvent(
        tool_id=cut.call_id, tool_name=cut.name, args={}, status="error", result=content
    )
    return event, ToolMessage(call_id=cut.call_id, content=content)


async def _say(text: str, spoken: list[str]) -> AsyncIterator[str]:
    """Speak a notice, on a line of its own after anything already said."""
    if spoken and not spoken[-1].endswith("\n"):
        spoken.append("\n")
        yield "\n"
    spoken.append(text)
    yield text
