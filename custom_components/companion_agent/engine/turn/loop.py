"""``ToolLoop.run_turn``: the streaming, bounded, concurrent tool-calling loop.

Text streams out the moment the model sends it; the tool calls of one round run
concurrently, each reported as it ends, their results sent back in call order; the loop
runs at most ``max_rounds`` model calls. A round whose calls still run after the persona's
``[holding] after`` seconds says one holding line ("One moment, I'm looking at the
camera."), and a model server that is busy (loading, queueing, 429/503) gets the plain one
("One moment, please."), so a speaker never waits in silence; the person hears it and it is
stored, the model never sees it. Everything the model saw and did is written into the turn's
``TurnRecord`` as it happens, so whoever ends the turn (the answer, a cancel, the deadline)
finds an exact account in it.

``LanguageCheck`` wraps the turn's model: a reply in the wrong language is caught before it
is spoken and asked for again once. The system prompt states the language; small models
still drift (Qwen into Chinese, Llama into English), and a Piper voice for one language
cannot speak another. The check is cheap and deterministic: the script of the first
letters of each round's reply.

- Expected: the script of the conversation's language (``ToolContext.language``, the
  voice's), and the script of the person's own words this turn (someone who writes
  English to a Chinese voice gets English). Unknown languages are not checked.
- The first text of a round waits for its first letters (a Han, kana or hangul letter
  weighs 3, a Latin or other letter 1; text in square brackets, the action tags, does not
  count). In an expected script it goes on at ``PASS_WEIGHT`` (the first token or two);
  in another it is held until ``DECIDE_WEIGHT`` confirms it, then the round is abandoned
  (its stream closed) and asked again, once per turn, with a short note after the
  person's words; what the second answer says goes through as it is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace

from ..chars import script_of
from ..errors import LLMBusyError, LLMError
from ..events import SpeechCut, TextDelta, ThinkingDelta, ToolCallEvent, ToolStatus, TurnOutcome
from ..llm import ChatModel, LLMItem, PartialToolCall, RoundEnd, ServerWaiting
from ..messages import AssistantMessage, ChatMessage, ToolCallRequest, ToolMessage, UserMessage
from ..pipeline.marks import CLOSERS, NEWLINES, RUN_MARKUP, TERMINATORS
from ..plugins.profiles import DEFAULT_MAX_ROUNDS
from ..redaction import redact, shown_arguments
from ..tools.contract import ToolContext, ToolOutcome, ToolSpec, ToolSuccess, parse_arguments
from ..tools.holding import HoldingLines
from ..tools.registry import ToolExecutor, failure
from .prompt import language_name, persons_words

LOGGER = logging.getLogger(__name__)

TOOL_CALL_CEILING = 120.0

type LoopItem = TextDelta | ThinkingDelta | ToolCallEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class SpokenLines:
    """What the person hears when a turn cannot answer, in their language (host-supplied)."""

    unreachable: str
    cut: str
    rounds: str
    deadline: str
    busy: str
    """Too many turns a minute (the person's pace, not the model's)."""
    slow: str
    """The model server took the request but sent nothing in time (busy, loading)."""
    voice_refused: str
    """A yes to a held call that waits for an enrolled adult's voice, from one that may not."""
    disowned: str
    """"That wasn't me": the last exchange taken as the person's is now the household's."""
    nothing_disowned: str
    """"That wasn't me", with nothing of the person's in the conversation to take back."""


@dataclass(slots=True, kw_only=True)
class TurnRecord:
    """What one turn did so far: its messages as the model saw them, events, usage, outcome.

    ``partial`` is the text of the round in progress, not yet a message. ``held`` are the
    holding lines said while a round's tools ran: never sent to the model, but stored with
    the message whose calls they were said during (``as_said``), as the person heard them.
    ``corrections`` are the sentences the reply check replaced (``reply_check.py``): the
    turn's text is read with them applied, in order, so what is stored is what was shown.
    """

    messages: list[ChatMessage] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    held: list[tuple[int, str]] = field(default_factory=list)
    """Each holding line, as shown, after the index of the message whose calls it covered."""
    waited: list[tuple[int, str]] = field(default_factory=list)
    """Each line said while a busy server was waited for, before the index of its round."""
    events: list[ToolCallEvent] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    outcome: TurnOutcome = "complete"
    reason: str | None = None
    finish_reason: str | None = None
    """How the last round ended, as the server said (``stop``, ``length`` …)."""
    corrections: list[tuple[str, str]] = field(default_factory=list)
    """Each corrected sentence as the model wrote it, and the text shown instead, in order."""
    speech_cut: SpeechCut | None = None
    stop: bool = False
    """The reply check asks the round to stop reading the model (it repeats itself)."""

    @property
    def text(self) -> str:
        """Return everything the model wrote in this turn as shown, rounds in order."""
        written = [m.content for m in self.messages if isinstance(m, AssistantMessage)]
        return "".join(corrected([*written, "".join(self.partial)], self.corrections))

    def lines(self) -> tuple[str, ...]:
        """Return the holding lines said, in the order they were said."""
        said = sorted(
            [(index, 0, line) for index, line in self.waited]
            + [(index, 1, line) for index, line in self.held]
        )
        return tuple(line.strip() for _, _, line in said if line.strip())

    def as_said(self) -> list[ChatMessage]:
        """Return the turn's messages as the person was told them, the round in progress too.

        Each holding line joins the content of the message whose calls it was said during,
        so the stored text reads in the order it was shown.
        """
        said = [*self.messages, AssistantMessage(content="".join(self.partial))]
        replies = [(i, m) for i, m in enumerate(said) if isinstance(m, AssistantMessage)]
        texts = corrected([m.content for _, m in replies], self.corrections)
        for (index, reply), text in zip(replies, texts, strict=True):
            said[index] = replace(reply, content=text)
        for index, line in self.held:
            message = said[index]
            if isinstance(message, AssistantMessage):
                said[index] = replace(message, content=message.content + line)
        for index, line in self.waited:
            message = said[index]
            if isinstance(message, AssistantMessage):
                said[index] = replace(message, content=line + message.content)
        return said


def corrected(contents: Sequence[str], corrections: Sequence[tuple[str, str]]) -> list[str]:
    """Return ``contents`` (texts in order) with each correction applied where it comes next.

    Each ``(written, shown)`` replaces the first ``written`` after the previous one; one
    that is not found (never expected) is skipped.
    """
    out = list(contents)
    index = at = 0
    for written, shown in corrections:
        for look in range(index, len(out)):
            found = out[look].find(written, at if look == index else 0)
            if found >= 0:
                out[look] = out[look][:found] + shown + out[look][found + len(written) :]
                index, at = look, found + len(shown)
                break
    return out


class ToolLoop:
    """Run turns: stream text the moment it arrives, run tools, loop a bounded number of times."""

    def __init__(
        self,
        model: ChatModel,
        tools: ToolExecutor,
        lines: SpokenLines,
        *,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        tool_ceiling: float = TOOL_CALL_CEILING,
        holding: HoldingLines | None = None,
    ) -> None:
        """Bind the model, the tools and the host's spoken lines; bound the model calls.

        With ``holding``, a tool round still running after ``holding.after`` seconds says
        one holding line (see ``_run_tools``); without, a slow tool is silent.
        """
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self._model = model
        self._tools = tools
        self._lines = lines
        self._max_rounds = max_rounds
        self._tool_ceiling = tool_ceiling
        self._holding = holding

    async def run_turn(
        self, messages: Sequence[ChatMessage], ctx: ToolContext, record: TurnRecord
    ) -> AsyncIterator[LoopItem]:
        """Yield text, thinking and tool events; keep ``record`` exact at every step."""
        prompt = list(messages)
        specs = self._tools.specs()
        model = LanguageCheck(self._model, ctx.language, messages)
        last = edge = ""  # the model's last character; the last one shown (a line's too)
        said: set[str] = set()
        for rounds in range(1, self._max_rounds + 1):
            record.rounds = rounds
            end = RoundEnd(error=LLMError("the stream ended without an end", retryable=False))
            stream = model.stream_with_tools([*prompt, *record.messages], specs)
            async for item in _until_stopped(stream, record):
                match item:
                    case str() if item:
                        if edge and not record.partial and not edge.isspace():
                            yield TextDelta(text="\n")
                        record.partial.append(item)
                        last = edge = item[-1]
                        yield TextDelta(text=item, model_text=item)
                    case ThinkingDelta():
                        yield item
                    case ServerWaiting() if not record.partial:
                        if (line := self._waiting_line(record, said, edge)) is not None:
                            record.waited.append((len(record.messages), line))
                            edge = line[-1]
                            yield TextDelta(text=line, model_text=line)
                    case RoundEnd():
                        end = item
            for key, value in end.usage.items():
                record.usage[key] = record.usage.get(key, 0) + value
            record.finish_reason = end.finish_reason
            text = "".join(record.partial)
            record.partial.clear()
            if end.error is not None and end.cut_tool_calls:
                record.messages.append(_cut_assistant(text, end.cut_tool_calls))
                for cut in end.cut_tool_calls:
                    event, message = _cut_call_report(cut)
                    record.events.append(event)
                    record.messages.append(message)
                    yield event
                continue
            kept = tuple(_masked(call) for call in end.tool_calls)
            record.messages.append(AssistantMessage(content=text, tool_calls=kept))
            if end.error is not None:
                record.outcome, record.reason = ("cut" if last else "failed"), str(end.error)
                yield _notice(self._failure_line(end.error, last), edge)
                return
            if not end.tool_calls:
                return
            hold = None
            if self._holding is not None and closes_sentence(record.text):
                hold = _Hold(lines=self._holding, said=said, lead=_lead(edge))
            async for out in self._run_tools(end.tool_calls, specs, ctx, record, hold):
                if isinstance(out, TextDelta):
                    edge = out.text[-1]
                yield out
        record.outcome, record.reason = "failed", "too many tool rounds"
        yield _notice(self._lines.rounds, edge)

    def _waiting_line(self, record: TurnRecord, said: set[str], edge: str) -> str | None:
        """Return the line to show while a busy server is waited for, once a turn; or None.

        It is the persona's plain holding line ("One moment, please."), said between
        sentences only, and not when the turn already said it (a slow tool's line counts).
        """
        if self._holding is None or not closes_sentence(record.text):
            return None
        line = self._holding.waiting_line(said)
        if line is None:
            return None
        said.add(line)
        return f"{_lead(edge)}{line}\n"

    def _failure_line(self, error: LLMError, last: str) -> str:
        """Return what the person hears when a round fails: cut, slow or unreachable."""
        if last:
            return self._lines.cut
        return self._lines.slow if isinstance(error, LLMBusyError) else self._lines.unreachable

    async def _run_tools(
        self,
        calls: Sequence[ToolCallRequest],
        specs: Sequence[ToolSpec],
        ctx: ToolContext,
        record: TurnRecord,
        hold: _Hold | None,
    ) -> AsyncIterator[ToolCallEvent | TextDelta]:
        """Run one round's calls concurrently; report each as it ends; answer in call order.

        With ``hold``, a round with a call still running ``hold.lines.after`` seconds after
        it began says one holding line, for the first such call. Cancelled (the person
        interrupted): calls not yet at their tool are cancelled at once; a call already
        running finishes (the executor shields it) and is recorded.
        """
        names = {spec.name for spec in specs}
        runnable = [c.name in names and parse_arguments(c.arguments) is not None for c in calls]
        for call, ok in zip(calls, runnable, strict=True):
            if ok:
                yield _event(call, None)
        outcomes: dict[str, ToolOutcome] = {}
        tasks = {asyncio.create_task(self._execute(call, ctx)): call for call in calls}
        clock = asyncio.get_running_loop()
        hold_at = None if hold is None else clock.time() + hold.lines.after
        try:
            pending = set(tasks)
            while pending:
                wait = None if hold_at is None else max(hold_at - clock.time(), 0.0)
                done, pending = await asyncio.wait(
                    pending, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
                if not done and hold is not None:
                    hold_at = None  # one line a round at most
                    running = sorted((tasks[task] for task in pending), key=calls.index)
                    if (line := hold.line(running)) is not None:
                        record.held.append((len(record.messages) - 1, line))
                        yield TextDelta(text=line, model_text=line)
                    continue
                for task in sorted(done, key=lambda t: calls.index(tasks[t])):
                    outcomes[tasks[task].call_id] = task.result()
                    event = _event(tasks[task], task.result())
                    record.events.append(event)
                    yield event
        except asyncio.CancelledError:
            await _settle(tasks, outcomes, self._tool_ceiling)
            raise
        finally:
            for task in tasks:
                task.cancel()
            for call in calls:
                outcome = outcomes.get(call.call_id) or _not_run(call)
                images = outcome.images if isinstance(outcome, ToolSuccess) else ()
                record.messages.append(
                    ToolMessage(call_id=call.call_id, content=outcome.content, images=images)
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


async def _settle(
    tasks: dict[asyncio.Task[ToolOutcome], ToolCallRequest],
    outcomes: dict[str, ToolOutcome],
    ceiling: float,
) -> None:
    """Cancel the calls of a cancelled round; keep the outcomes of those that still finish."""
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks, timeout=ceiling)
    for task, call in tasks.items():
        if task.done() and not task.cancelled() and task.exception() is None:
            outcomes.setdefault(call.call_id, task.result())


async def _until_stopped(
    stream: AsyncIterator[LLMItem], record: TurnRecord
) -> AsyncIterator[LLMItem]:
    """Yield a round's items until the reply check stops the turn's reply (``record.stop``).

    Then the round ends as a repetition and its stream is closed now, not when collected:
    the server stops generating.
    """
    try:
        async for item in stream:
            yield item
            if record.stop:
                yield RoundEnd(finish_reason="repetition")
                return
    finally:
        if record.stop and (close := getattr(stream, "aclose", None)) is not None:
            await close()


def closes_sentence(text: str) -> bool:
    """Say whether ``text`` (what the model wrote so far) stops at a sentence's end, or is empty.

    A line break ends one; else the last mark before any closing quotes, brackets and
    emphasis must be a terminator (``. ! ? … 。 ！ ？``): a line said after anything else
    would cut into the middle of a sentence being spoken.
    """
    text = text.rstrip(" \t")
    if not text or text[-1] in NEWLINES:
        return True
    text = text.rstrip("".join(CLOSERS) + "'" + RUN_MARKUP)
    return bool(text) and text[-1] in TERMINATORS


def _lead(edge: str) -> str:
    """Return what puts a line on a line of its own after the last character shown."""
    return "\n" if edge and edge not in NEWLINES else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hold:
    """One round's holding line: the turn's lines, those it said, what starts a new line."""

    lines: HoldingLines
    said: set[str]
    lead: str

    def line(self, running: Sequence[ToolCallRequest]) -> str | None:
        """Return the text to show for the calls still ``running``, once; None: say nothing.

        It ends with a line break, so the sentence divider closes it at once and the
        model's next text starts a sentence of its own.
        """
        line = self.lines.line(running, self.said)
        if line is None:
            return None
        self.said.add(line)
        return f"{self.lead}{line}\n"


def _not_run(call: ToolCallRequest) -> ToolOutcome:
    """Return what the model hears of a call the turn ended before it ran."""
    return failure("cancelled", f"{call.name} was not run: the turn ended first", retryable=True)


def _event(call: ToolCallRequest, outcome: ToolOutcome | None) -> ToolCallEvent:
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
    return ToolCallEvent(
        tool_id=call.call_id,
        tool_name=call.name,
        args=shown_arguments(call.arguments, call.secret),
        status=status,
        result=None if outcome is None else outcome.content,
    )


def _masked(call: ToolCallRequest) -> ToolCallRequest:
    """Return the call as history keeps it: arguments the contract marks secret masked."""
    if not call.secret or (args := parse_arguments(call.arguments)) is None:
        return call
    masked = redact(args, call.secret)
    return replace(call, arguments=json.dumps(masked, ensure_ascii=False))


def _notice(text: str, last: str) -> TextDelta:
    """Return a host line to speak, on a line of its own after anything already said."""
    return TextDelta(text=f"\n{text}" if last and last != "\n" else text)


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


PASS_WEIGHT = 2
"""An answer whose first letters are in an expected script goes on at once (one token)."""
DECIDE_WEIGHT = 12
"""An answer in another script is held until this much says it really is."""
MAX_HELD_CHARS = 200
WIDE_SCRIPTS = frozenset({"han", "kana", "hangul"})
LATIN_LANGUAGES = frozenset(
    {"en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "no", "nb", "nn", "fi", "is"}
    | {"pl", "cs", "sk", "sl", "hr", "bs", "hu", "ro", "tr", "vi", "id", "ms", "ca", "eu"}
    | {"gl", "et", "lv", "lt", "sq", "af", "sw", "tl", "cy", "ga", "lb", "mt"}
)
_TAGS = re.compile(r"\[[^\]\n]{0,40}\]")
_SCRIPTS: dict[str, frozenset[str]] = {
    "zh": frozenset({"han"}),
    "ja": frozenset({"han", "kana"}),
    "ko": frozenset({"hangul", "han"}),
    "el": frozenset({"greek"}),
    "he": frozenset({"hebrew"}),
    "th": frozenset({"thai"}),
    **{tag: frozenset({"cyrillic"}) for tag in ("ru", "uk", "bg", "be", "mk", "kk")},
    **{tag: frozenset({"arabic"}) for tag in ("ar", "fa", "ur")},
    **{tag: frozenset({"devanagari"}) for tag in ("hi", "mr", "ne")},
    **{tag: frozenset({"latin"}) for tag in LATIN_LANGUAGES},
}


def language_scripts(tag: str) -> frozenset[str]:
    """Return the scripts a language is written in; empty when this table does not know it."""
    return _SCRIPTS.get(tag.lower().split("-", maxsplit=1)[0], frozenset())


def dominant_script(text: str) -> tuple[str | None, int]:
    """Return the script most of the letters of ``text`` are in, and their total weight."""
    weights: Counter[str] = Counter()
    for char in _TAGS.sub(" ", text):
        if (script := script_of(char)) is not None:
            weights[script] += 3 if script in WIDE_SCRIPTS else 1
    if not weights:
        return None, 0
    return weights.most_common(1)[0][0], weights.total()


class LanguageCheck:
    """A ``ChatModel`` for one turn: the inner model, its replies checked for their script."""

    def __init__(self, model: ChatModel, language: str, messages: Sequence[ChatMessage]) -> None:
        """Expect ``language`` (and the script of the person's words in ``messages``)."""
        self._model = model
        self._language = language
        self._expected = language_scripts(language)
        said = next((m.content for m in reversed(messages) if isinstance(m, UserMessage)), "")
        script, weight = dominant_script(persons_words(said))
        if self._expected and script is not None and weight >= DECIDE_WEIGHT // 2:
            self._expected |= {script}
        self._retried = False

    def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; ask again once if it starts in another script."""
        return self._checked(messages, tools)

    async def _checked(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Hold the first text until its script is known; pass or retry, then stream on."""
        held = ""
        deciding = bool(self._expected) and not self._retried
        stream = self._model.stream_with_tools(messages, tools)
        try:
            async for item in stream:
                if not deciding:
                    yield item
                    continue
                if isinstance(item, str):
                    held += item
                    script, weight = dominant_script(held)
                    expected = script in self._expected and weight >= PASS_WEIGHT
                    if not expected and weight < DECIDE_WEIGHT and len(held) < MAX_HELD_CHARS:
                        continue
                elif not isinstance(item, RoundEnd) or not held:
                    yield item
                    continue
                deciding = False
                ended = isinstance(item, RoundEnd)
                # a round that called tools is never asked again
                calls = isinstance(item, RoundEnd) and bool(item.tool_calls)
                if not calls and self._wrong(held, whole=ended):
                    break
                yield held
                if isinstance(item, RoundEnd):
                    yield item
            else:
                if deciding and held:
                    yield held
                return
        finally:
            closer = getattr(stream, "aclose", None)
            if closer is not None:
                await closer()  # an abandoned answer's stream closes now, not when collected
        async for item in self._model.stream_with_tools(self._corrected(messages), tools):
            yield item

    def _wrong(self, text: str, *, whole: bool) -> bool:
        """Say whether ``text`` is in a script not expected, and a retry is left for it.

        A ``whole`` reply that ended before the usual weight is judged on half of it.
        """
        script, weight = dominant_script(text)
        enough = DECIDE_WEIGHT // 2 if whole else DECIDE_WEIGHT
        if self._retried or script is None or weight < enough or script in self._expected:
            return False
        self._retried = True
        LOGGER.info(
            "The model answered in %s script; the conversation is in %s: asking again once",
            script,
            self._language,
        )
        return True

    def _corrected(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """Return the messages with a short note on the language after the person's words."""
        note = f"\n\n(Answer in {language_name(self._language)}.)"
        out = list(messages)
        for at in range(len(out) - 1, -1, -1):
            message = out[at]
            if isinstance(message, UserMessage):
                out[at] = replace(message, content=message.content + note)
                break
        return out
