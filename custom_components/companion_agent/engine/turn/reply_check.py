"""``ReplyCheck``: each sentence of a reply checked before it is shown, spoken or stored.

A stage after the output pipeline, sentence by sentence, whatever the model does:

- **Claims** (``tools/claims.py``): a sentence that says a device changed while no call of
  the turn changed anything is replaced by the persona's correction ("I haven't changed
  anything yet."), on the display, in speech and in the stored turn (``TurnRecord.
  corrections``), and counted. To replace it before it is shown, the sentence's text is
  held until the sentence is decided, while the check is armed: once a call of the turn
  changed something, text streams on at once. Speech is not delayed: the voice begins on
  the model's own first sentence (``first_guess``), heard only if it stands.
- **Repetition** (``llm/repetition.py``, ``SentenceRepeats``): the sentence that repeats
  earlier ones nearly word for word ends the spoken reply, and the model is no longer read
  (``TurnRecord.stop``); what it wrote until then is shown, not spoken.
- **Bound**: at most ``spoken_sentences`` sentences and about ``spoken_seconds`` of speech
  (the first sentence always; speech estimated from the text at a calm rate,
  ``speech/audio_length.py``: 15 letters or 4 CJK characters a second) are spoken; the
  rest is shown, not spoken.

Host lines (a failure notice: text with no model text) are never checked, counted or
silenced. A reply whose speech ended early is marked (``TurnRecord.speech_cut``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass, replace

from ..events import OutputItem, SentenceOutput, TextDelta, ToolCallEvent
from ..llm.repetition import SentenceRepeats
from ..pipeline import speakable
from ..speech.audio_length import spoken_seconds
from ..tools.claims import ChangeClaims
from .loop import TurnRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyRules:
    """What a persona's replies are checked against (its profile's, for one turn)."""

    claims: ChangeClaims
    spoken_seconds: float
    spoken_sentences: int
    read_only: Collection[str]
    """The tools (by the name the model calls them) that only read: never a change."""


class ReplyCheck:
    """One turn's check: what changed so far, what was said, what is held."""

    def __init__(self, rules: ReplyRules, record: TurnRecord) -> None:
        """Check against ``rules``; take the calls already ended (a confirmed call) from
        ``record``, and write corrections and cuts into it."""
        self._rules = rules
        self._record = record
        self._repeats = SentenceRepeats()
        self._held: list[OutputItem] = []
        self._spoken = 0
        self._seconds = 0.0
        self._changed = self._looked = False
        self._passed = False
        """Model text went on unheld since the last sentence (the check was not armed)."""
        for event in record.events:
            self._ended(event)

    @property
    def armed(self) -> bool:
        """Say whether a claim would be corrected now (no call changed anything yet)."""
        return self._rules.claims.enabled and not self._changed

    def guess(self, speech: str) -> str:
        """Return what a guess of the first sentence's speech will be once checked."""
        if self.armed and (found := self._rules.claims.claim(speech, looked=self._looked)):
            return speakable(found.correction)
        return speech

    async def apply(
        self, stream: AsyncIterator[OutputItem], leftover: Callable[[OutputItem], None]
    ) -> AsyncIterator[OutputItem]:
        """Pass the items on, each sentence checked (see the module).

        A turn that ends inside a sentence (its deadline, a cancel) hands the text held
        for it, checked, to ``leftover``: it was the model's, shown until then.
        """
        try:
            async for item in self._checked(stream):
                yield item
        finally:
            for item in self._unfinished():
                leftover(item)

    async def _checked(self, stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Yield the items, each sentence checked."""
        async for item in stream:
            match item:
                case TextDelta() if self.armed or self._held:
                    self._held.append(item)
                case TextDelta():
                    self._passed = self._passed or bool(item.model_text)
                    yield item
                case SentenceOutput():
                    for out in self._sentence(item):
                        yield out
                case ToolCallEvent():
                    for out in self._release():
                        yield out
                    self._ended(item)
                    yield item
                case _ if self._held:
                    self._held.append(item)
                case _:
                    yield item
        for out in self._release():
            yield out

    def _ended(self, event: ToolCallEvent) -> None:
        """Note a call that succeeded: a look at the house, or a change to it."""
        if event.status != "completed":
            return
        if event.tool_name in self._rules.read_only:
            self._looked = True
        else:
            self._changed = True

    def _unfinished(self) -> list[OutputItem]:
        """Return the text held for a sentence that never ended, checked as one."""
        held = self._release()
        written = "".join(i.model_text for i in held if isinstance(i, TextDelta))
        if written and self.armed:
            found = self._rules.claims.claim(written, looked=self._looked)
            if found is not None:
                held, _ = self._correct(
                    held, written, SentenceOutput(display_text="", tts_text=""), found.correction
                )
        return held

    def _release(self) -> list[OutputItem]:
        """Return what is held, and hold nothing."""
        held, self._held = self._held, []
        return held

    def _sentence(self, sentence: SentenceOutput) -> list[OutputItem]:
        """Check one decided sentence; return it with the text it was cut from before it."""
        own, self._held = _split(self._held, len(sentence.display_text.lstrip()))
        written = "".join(i.model_text for i in own if isinstance(i, TextDelta))
        passed, self._passed = self._passed, False
        if not (written or passed):
            return [*own, sentence]  # a host line
        if self.armed and (found := self._rules.claims.claim(written, looked=self._looked)):
            own, sentence = self._correct(own, written, sentence, found.correction)
        if self._record.speech_cut is None and sentence.tts_text:
            self._bound(sentence.tts_text)
        if self._record.speech_cut is not None and sentence.tts_text:
            sentence = replace(sentence, tts_text="")
        return [*own, sentence]

    def _correct(
        self, own: list[OutputItem], written: str, sentence: SentenceOutput, correction: str
    ) -> tuple[list[OutputItem], SentenceOutput]:
        """Replace a claiming sentence's text with the correction; note it on the record."""
        lead = written[: len(written) - len(written.lstrip())]
        self._record.corrections.append((written, lead + correction))
        shown = "".join(i.text for i in own if isinstance(i, TextDelta))
        gap = shown[: len(shown) - len(shown.lstrip())]
        rest = [i for i in own if not isinstance(i, TextDelta)]
        delta = TextDelta(text=gap + correction, model_text=lead + correction)
        checked = SentenceOutput(
            display_text=gap + correction,
            tts_text=speakable(correction),
            actions=sentence.actions,
        )
        return [*rest, delta], checked

    def _bound(self, speech: str) -> None:
        """Count a spoken sentence; mark the speech cut where it repeats or runs too long."""
        rules, record = self._rules, self._record
        seconds = spoken_seconds(speech)
        if self._repeats.feed(speech):
            record.speech_cut, record.stop = "repeated", True
        elif self._spoken >= rules.spoken_sentences or (
            self._spoken and self._seconds + seconds > rules.spoken_seconds
        ):
            record.speech_cut = "long"
        else:
            self._spoken += 1
            self._seconds += seconds


def _split(held: list[OutputItem], length: int) -> tuple[list[OutputItem], list[OutputItem]]:
    """Return the held items up to ``length`` characters of text (from its first non-space
    character), and those after.

    The pipeline sends a sentence's text before it; text it read on to decide the end
    (a gap, the next word) may come before it too, and stays held for the next sentence.
    """
    if length == 0:
        return [], held
    taken = 0
    begun = False
    for at, item in enumerate(held):
        if isinstance(item, TextDelta) and item.text:
            if taken >= length and begun:
                return held[:at], held[at:]
            text = item.text if begun else item.text.lstrip()
            begun = begun or bool(text)
            taken += len(text)
    return held, []
