"""Typed items that flow out of a turn and through the output pipeline.

Every item is a frozen dataclass with a ``kind`` literal; stages dispatch on it with
``match``. Nothing structural ever travels inside text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .json_types import JSONObject

type ToolStatus = Literal["running", "completed", "error", "pending_confirmation"]
type TurnOutcome = Literal["complete", "cut", "interrupted", "failed", "timed_out"]
"""How a turn ended: answered; the model's stream broke off; the person (or host)
cancelled it; the model could not answer; the turn's deadline passed."""
type SpeechCut = Literal["long", "repeated"]
"""Why the rest of a reply was shown but not spoken: past the persona's bound of speech,
or the model started repeating itself."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of the reply as it streams.

    ``text`` is what a person reads (after the pipeline: action tags and thinking
    removed); ``model_text`` is the model's own text it came from, tags included, so the
    host can keep exactly what was shown. Host notices (an apology) have no model text.
    """

    kind: Literal["text"] = "text"
    text: str
    model_text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent:
    """A tool call's progress: ``running`` first, then one final status."""

    kind: Literal["tool_call"] = "tool_call"
    tool_id: str
    tool_name: str
    args: JSONObject
    status: ToolStatus
    result: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """Reasoning text from the model: shown only if configured, never spoken."""

    kind: Literal["thinking"] = "thinking"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SentenceOutput:
    """One finished sentence: what a person reads, what TTS speaks, and its actions."""

    kind: Literal["sentence"] = "sentence"
    display_text: str
    tts_text: str
    actions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Heard:
    """How much of a turn's audio reached the person: what a host tells ``Turn.played``.

    ``Heard.everything()``: it all played; ``Heard.first(n)``: the person spoke over it
    after ``n`` sentences; ``Heard.undelivered()``: none of it reached them (the speech or
    the device failed).
    """

    sentences: int | None = None
    """How many sentences were heard before the person spoke over them; None: every one."""
    delivered: bool = True

    @classmethod
    def everything(cls) -> Heard:
        """Return: the whole answer was played."""
        return cls()

    @classmethod
    def first(cls, sentences: int) -> Heard:
        """Return: the person spoke over the answer after its first ``sentences`` sentences."""
        return cls(sentences=max(0, sentences))

    @classmethod
    def undelivered(cls) -> Heard:
        """Return: the answer's audio never reached the person."""
        return cls(sentences=0, delivered=False)


EVERYTHING_HEARD = Heard()


@dataclass(frozen=True, slots=True, kw_only=True)
class Interrupted:
    """The turn was cancelled: the last item its host takes, and why.

    ``outcome`` is ``interrupted`` (the person spoke over it, or the host gave up) or
    ``failed`` (the host could not deliver the answer).
    """

    kind: Literal["interrupted"] = "interrupted"
    reason: str
    outcome: Literal["interrupted", "failed"] = "interrupted"


@dataclass(frozen=True, slots=True, kw_only=True)
class Played:
    """The turn's audio finished while the turn still streamed, with what was heard."""

    kind: Literal["played"] = "played"
    heard: Heard = EVERYTHING_HEARD


type OutputItem = TextDelta | ThinkingDelta | ToolCallEvent | SentenceOutput | Interrupted | Played


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """How a turn ended and what it produced, for storage, hooks and the host.

    ``text`` is everything the model wrote; ``shown`` the model text of the replies the
    host actually took from the turn; ``spoken`` the text handed to speech.
    ``speech_cut``: why the reply's speech ended before its text (None: it did not);
    ``corrected``: how many sentences claimed a change no call made, and were corrected.
    """

    kind: Literal["turn_result"] = "turn_result"
    outcome: TurnOutcome
    text: str
    shown: str = ""
    spoken: str = ""
    tool_calls: tuple[ToolCallEvent, ...] = ()
    rounds: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    reason: str | None = None
    speech_cut: SpeechCut | None = None
    corrected: int = 0
