"""Where sentences end: an incremental scanner that decides each boundary once.

Boundary rules (every decision depends on the text alone, never on how it was chunked):

- Full-width terminators ``。！？；｡．`` and ASCII ``!?`` right after a CJK character end
  the sentence at once, in the same step as the token that carries them: no lookahead.
  An ASCII ``.`` right after a CJK character ends it whatever follows, but waits for that
  one character: another dot makes it an ellipsis.
- ASCII ``.!?`` elsewhere wait for the character after the run of ``.!?``, closing
  quotes/brackets and ``*_` `` markup: a gap (whitespace, emoji; see below) or a CJK
  character ends the sentence, anything else (``3.14``, ``10.30``, ``example.com``,
  ``?q=``) does not; nor do marks before the sentence's first letter or digit.
- An ellipsis (a run with two or more dots, or ``…``/``……``) ends the sentence only before
  a capital letter or CJK text (not a CJK mark), right after it or past whitespace:
  ``Hmm... Let me`` and ``想想……明天`` end, ``I was... thinking`` and ``……，`` do not.
- After ``.``, the word before it decides: ``Mr. Dr. e.g. i.e. vs. St.``, single capital
  initials and list numbers at the start of a line (``1.``) never end a sentence; ``etc. a.m.
  p.m. U.S. Inc.`` (and any ``x.y.``) end it only if the next word starts with a capital
  or a CJK character; ``No.`` ends it unless a number follows. Only these and an ellipsis
  look at the word after the gap; other ends only wait for it to start.
- Quotes and brackets are tracked: inside an open one nothing ends the sentence; the
  closer that empties the stack right after a terminator ends it (``「はい。」`` at ``」``).
- Right after a terminator, ASCII ``'`` and a ``"`` that closes nothing are closers too
  (``'Movie night.' Should``): they join the run. Before a letter or digit they are no
  closers: ``'`` is an apostrophe (``U.S.'s``) and ``"`` opens a quote (``Done."Next"``).
  ``'`` is never tracked (``don't``), so after a full-width terminator it starts the next.
- Whitespace and emoji (whole clusters: ZWJ sequences, skin tones, flags, variation
  selectors; not keycaps) after an end that waits are a gap the end waits past: text after
  it starts the next sentence, gap and all (``Done! 🎉 Next``), but a mark stays (``🎉!``);
  the end of the stretch or a newline leaves the emoji with the sentence (``Have a great
  day! 🎉``). An end decided at once (full-width, ``!?`` after CJK) leaves before them.
- A newline always ends a sentence, so markdown list items stand alone.
- ``faster_first_response``: the first sentence may end after ``，、`` (at once) or ``,``
  (one character of lookahead, not before a digit) once it holds enough characters.
- The hard cap cuts at the best break in the cap's second half: a pending terminator, the
  last clause mark, the last space, else a grapheme-cluster boundary (no emoji is split),
  never inside an action tag opened in the last 32 characters. A whitespace run longer
  than half the cap may be dropped; nothing else ever is.

An end nothing after it can change (full-width, ``!?`` after CJK, a closer that empties
the stack, a newline) leaves with the chunk that closes it; any other waits for the text
that decides it (``Really?!``, a decimal, an abbreviation, an ellipsis), and no longer.

Whitespace at a boundary starts the next sentence: no sentence ends with whitespace, and a
stretch's sentences concatenate to it exactly, minus its leading and trailing whitespace.
Each character is examined once (a cap cut rescans at most half a cap, an opening quote
twice): linear cost; the buffer holds at most one sentence (and its gap) and one chunk.
``gap_would_end`` says when a voice may begin on the likely end (``first_guess.py``).
"""

from __future__ import annotations

import re
from typing import Literal

from ..chars import is_extender, is_wide
from .marks import (
    CLOSERS,
    DOTS,
    NEWLINES,
    PAIRS,
    RUN_CLOSERS,
    RUN_MARKUP,
    TERMINATORS,
    WIDE_TERMINATORS,
    Awaiting,
    best_break,
    run_verdict,
    starts_sentence,
    trails,
)
from .stage import DEFAULT_CONFIG, PipelineConfig

_TAG_REACH = 32
_SPECIAL = re.escape(TERMINATORS + "".join(PAIRS) + "".join(CLOSERS) + NEWLINES)
_SCAN = re.compile(f"[{_SPECIAL}]")
_SCAN_FIRST = re.compile(f"[{_SPECIAL},，、]")

type Mode = Literal["scan", "run", "comma"] | Awaiting


class BoundaryScanner:
    """Feed text, get finished sentences; ``flush`` releases the rest."""

    __slots__ = (
        "_at_start",
        "_await_cut",
        "_buf",
        "_cap",
        "_clause_cut",
        "_eager",
        "_min_clause",
        "_mode",
        "_open_at",
        "_pos",
        "_run_start",
        "_stack",
        "_stray_quote_at",
    )

    def __init__(self, config: PipelineConfig = DEFAULT_CONFIG) -> None:
        """Start an empty stream with ``config``'s cap and first-sentence rule."""
        self._cap = config.max_sentence_chars
        self._clause_cut = config.faster_first_response
        self._min_clause = config.first_clause_min_chars
        self._buf = ""
        self._pos = 0
        self._at_start = True
        self._stack: list[str] = []
        self._open_at: list[int] = []
        self._mode: Mode = "scan"
        self._run_start = 0
        self._eager = False
        self._await_cut = 0
        self._stray_quote_at = -1

    def feed(self, text: str) -> list[str]:
        """Add ``text``; return every sentence it completes."""
        if self._at_start:
            text = text.lstrip()
            if not text:
                return []
            self._at_start = False
        self._buf += text
        return self._scan()

    def flush(self) -> str | None:
        """End the stretch of text: return what is left, if it holds anything visible."""
        rest = self._buf.rstrip()
        self._buf = ""
        self._pos = 0
        self._at_start = True
        self._reset()
        if rest:
            self._clause_cut = False
            return rest
        return None

    def gap_would_end(self) -> bool:
        """Say whether whitespace next would end the held text's sentence, after a word."""
        buf, start = self._buf, self._run_start
        if self._mode != "run" or self._stack or not buf[start - 1 : start].isalpha():
            return False  # no end waits, or ``3.`` (``3.5`` is as likely), or marks alone
        return run_verdict(buf, start, len(buf), " ", eager=self._eager) == "trail"

    def _reset(self) -> None:
        """Forget the quote stack and any pending decision."""
        self._stack.clear()
        self._open_at.clear()
        self._mode = "scan"

    def _cut(self, index: int, out: list[str]) -> None:
        """Release ``buf[:index]`` as a sentence and start the next one after it."""
        piece, self._buf = self._buf[:index], self._buf[index:]
        if piece.strip():
            out.append(piece)
            self._clause_cut = False
        self._reset()

    def _scan(self) -> list[str]:
        """Examine every character not yet seen; cut where a boundary is decided."""
        out: list[str] = []
        i = self._pos
        cap = self._cap
        while i < len(self._buf):
            if i >= cap:
                self._cut_at_cap(out)
                i = 0
            elif self._mode != "scan":
                i = self._pending(i, self._buf[i], out)
            elif found := (_SCAN_FIRST if self._clause_cut else _SCAN).search(self._buf, i, cap):
                i = self._special(found.start(), found.group(), out)
            else:
                i = min(len(self._buf), cap)
        self._pos = i
        return out

    def _pop_to(self, closer: str) -> bool:
        """Close the innermost open quote or bracket that ``closer`` ends, if any."""
        if closer not in self._stack:
            return False
        while self._stack:
            self._open_at.pop()
            if self._stack.pop() == closer:
                break
        return True

    def _special(self, i: int, char: str, out: list[str]) -> int:
        """Handle a character the scan stopped at; return where to continue."""
        buf = self._buf
        if char in NEWLINES:
            self._reset()
            if end := len(buf[:i].rstrip()):
                self._cut(end, out)
                return i - end + 1
            return i + 1
        if char in TERMINATORS:
            after_wide = i > 0 and is_wide(buf[i - 1])
            eager = char in WIDE_TERMINATORS or (after_wide and char in "!?")
            if eager and not self._stack:
                self._cut(i + 1, out)
                return 0
            eager = eager or (after_wide and char == ".")
            self._mode, self._run_start, self._eager, self._stray_quote_at = "run", i, eager, -1
        elif char in "，、":
            if not self._stack and len(buf[: i + 1].strip()) >= self._min_clause:
                self._cut(i + 1, out)
                return 0
        elif char == ",":
            self._mode = "comma"
        elif not self._pop_to(char) and char in PAIRS:
            self._stack.append(PAIRS[char])
            self._open_at.append(i)
        return i + 1

    def _pending(self, i: int, char: str, out: list[str]) -> int:
        """Continue a decision that waits on the next character; return where to go on."""
        match self._mode:
            case "run":
                return self._extend_run(i, char, out)
            case "comma":
                self._mode = "scan"
                if (
                    (char.isspace() or is_wide(char))
                    and not self._stack
                    and len(self._buf[:i].strip()) >= self._min_clause
                ):
                    self._cut(i, out)
                    return 0
                return i
            case "scan":
                return i
            case awaiting:
                if trails(char):
                    return i + 1
                self._mode = "scan"
                if char in NEWLINES or not starts_sentence(awaiting, char):
                    return i
                cut = self._await_cut
                self._cut(cut, out)
                return i - cut

    def _extend_run(self, i: int, char: str, out: list[str]) -> int:
        """Grow a run of terminators and closers, or decide the boundary it makes."""
        if char in TERMINATORS:
            if self._stack:
                return i + 1
            if self._eager and char in DOTS:
                self._eager = False  # a dot after CJK grew into an ellipsis
            elif char in WIDE_TERMINATORS or self._eager:
                self._cut(i + 1, out)
                return 0
            return i + 1
        if char in RUN_CLOSERS:
            if self._pop_to(char):
                if self._eager and not self._stack:
                    self._cut(i + 1, out)
                    return 0
            elif char == '"':
                self._stray_quote_at = i
            return i + 1
        if char in RUN_MARKUP or is_extender(char):
            return i + 1
        self._mode = "scan"
        if self._stack or char in NEWLINES:
            return i
        if self._stray_quote_at == i - 1 and char.isalnum():
            # A quote that closed nothing, before a word, opens one (``Done."Next"``): the
            # run ended before it, and the scan reads it again as an opener.
            if not self._eager:
                return i - 1
            self._cut(i - 1, out)
            return 0
        match run_verdict(self._buf, self._run_start, i, char, eager=self._eager):
            case "cut":
                self._cut(i, out)
                return 0
            case "keep":
                return i
            case awaiting:
                self._mode, self._await_cut = awaiting, i
                return i

    def _cut_at_cap(self, out: list[str]) -> None:
        """Cut a sentence that reached the cap at its best break."""
        cap = self._cap
        low = cap // 2
        limit = cap
        for closer, at in zip(self._stack, self._open_at, strict=True):
            if closer in "]】" and at >= max(low, cap - _TAG_REACH):
                limit = at
                break
        match self._mode:
            case "run" | "comma" if limit == cap:
                cut = cap
            case "trail" | "await_capital" | "await_number" | "await_ellipsis":
                cut = self._await_cut
            case _:
                cut = best_break(self._buf, low, limit)
        self._cut(cut, out)
