"""Action tags: ``[name]`` or ``【name】`` of the profile's vocabulary, taken out of the text.

A name matches case-insensitively, trimmed, and is reported in the vocabulary's own
spelling. Bracketed text that is not in the vocabulary stays text.

Within one sentence a tag is removed with the whitespace before it, or, at the start of a
sentence (nothing visible before it in that sentence), with the whitespace after it:
``"[joy] Hi there [wave]."`` reads ``"Hi there."`` (``ActionTags``).

**At token level** (``TagStream``), action tags come out of ``TextDelta`` as the reply
streams. ``TagStream`` takes the divider's text deltas and the sentences it cut, and gives
back display deltas that agree with the sentences exactly: their ``text`` joins to the
sentences' ``display_text`` (what ``ActionTags.extract`` makes of each sentence), and their
``model_text`` joins to the model text that came in, dropped tags included.

Text goes out at once, except for three holds:

- from ``[`` or ``【`` until the candidate closes, a newline comes or 40 characters pass;
- trailing whitespace, until the next visible character (a tag may still eat it);
- whitespace and tags between two visible characters, until the second one comes. Then
  the sentence rule decides: a tag eats the whitespace before it, or, at the start of a
  sentence, the whitespace after it; a sentence of tags alone shows nothing.

The divider sends each sentence right where it cut it, so the boundaries that decide a
tag's whitespace have arrived before the visible character after the tag. The one
boundary that can come later is a cut at the length cap, in the second half of a long
sentence: there a tag with different whitespace on its two sides, or a whitespace run half
the cap long (which the cap may drop), waits for the sentence to end.

A stretch of text (up to a non-text item or the end of the stream) loses its leading and
trailing whitespace, as in the sentences; its model text still goes out, on a delta with
empty text if no other delta carries it.

**Regions.** What ``TagStream`` decides with: tags in a sentence's text (``parse``), and
what a stretch of whitespace and tags between two visible characters shows (``shown``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

from ..events import TextDelta

TAG = re.compile(r"\[([^\[\]\n]{1,40})\]|【([^【】\n]{1,40})】")
"""A complete bracketed candidate; it is a tag when its name is in the vocabulary."""
OPEN_TAG = re.compile(r"\[[^\[\]\n]{0,40}\Z|【[^【】\n]{0,40}\Z")
"""A candidate that more text could still close: it runs to the end of the text."""


class ActionTags:
    """Find and remove the vocabulary's tags in a piece of text."""

    __slots__ = ("_names",)

    def __init__(self, vocabulary: Iterable[str]) -> None:
        """Index ``vocabulary`` by its case-folded spelling."""
        self._names = {name.strip().casefold(): name for name in vocabulary if name.strip()}

    @property
    def active(self) -> bool:
        """Say whether there is any tag to look for."""
        return bool(self._names)

    def name(self, found: re.Match[str]) -> str | None:
        """Return the vocabulary's name for a ``TAG`` match, or ``None`` if it is text."""
        return self._names.get((found.group(1) or found.group(2)).strip().casefold())

    def extract(self, text: str) -> tuple[str, tuple[str, ...]]:
        """Return ``text`` without known tags, and the tags' names in order."""
        if not self._names or ("[" not in text and "【" not in text):
            return text, ()
        pieces: list[str] = []
        actions: list[str] = []
        pos = 0
        has_content = False
        eat_space = False
        for found in TAG.finditer(text):
            name = self.name(found)
            if name is None:
                continue
            before = text[pos : found.start()]
            if eat_space:
                before = before.lstrip()
            if has_content or before.strip():
                before, has_content, eat_space = before.rstrip(), True, False
            else:
                eat_space = True
            pieces.append(before)
            actions.append(name)
            pos = found.end()
        if not actions:
            return text, ()
        rest = text[pos:]
        pieces.append(rest.lstrip() if eat_space else rest)
        return "".join(pieces), tuple(actions)


# At token level: ``TagStream``.
_ENDS_OPEN = re.compile(r"[\[\]【】\n]")
_LONGEST_OPEN = 41
"""What can end an open candidate: a bracket, a newline, or length (``[`` + 40)."""


class TagStream:
    """One stream's display text: feed it deltas and sentences, take display deltas back."""

    __slots__ = (
        "_base",
        "_content",
        "_cuts",
        "_dead",
        "_end",
        "_held",
        "_long_space",
        "_low",
        "_open_at",
        "_owed",
        "_paid",
        "_scan",
        "_since",
        "_start",
        "_started",
        "_tags",
    )

    def __init__(self, tags: ActionTags, max_sentence_chars: int) -> None:
        """Start an empty stream; ``max_sentence_chars`` is the divider's cap."""
        self._tags = tags
        self._scan = tags.active
        self._low = max_sentence_chars // 2
        self._long_space = re.compile(rf"\s{{{self._low},}}")
        self._end = 0
        self._paid = 0
        self._owed: deque[tuple[int, int, str, bool]] = deque()
        self._held = ""
        self._base = self._start = 0
        self._cuts: list[int] = []
        self._dead: list[Span] = []
        self._since: list[str] = []
        self._content = self._started = False
        self._open_at = -1

    def text(self, delta: TextDelta) -> TextDelta | None:
        """Take one delta; return the display delta it releases, if any."""
        text = delta.text
        start = self._end
        self._end = end = start + len(text)
        held = self._held
        if (
            self._started
            and (not held or held.isspace())
            and not self._cuts
            and not self._dead
            and len(held) + len(text) < self._low
            and not (self._scan and ("[" in text or "【" in text))
        ):
            return self._plain(delta, held, start, end)
        self._owed.append((start, end, delta.model_text, delta.model_text == text))
        if (
            self._open_at >= 0
            and end - self._open_at <= _LONGEST_OPEN
            and not _ENDS_OPEN.search(text)
        ):
            self._since.append(text)
            self._held += text
            return None
        if not self._started:
            text = text.lstrip()
            self._base = self._start = end - len(text)
            if not text:
                return None
            self._started = True
        self._since.append(text)
        self._held += text
        return self._advance(final=False)

    def _plain(self, delta: TextDelta, held: str, start: int, end: int) -> TextDelta | None:
        """Release text without tags after held whitespace: no cut can change it."""
        text = delta.text
        self._since.append(text)
        body = text.rstrip()
        if body and not held and not self._owed and len(body) == len(text):
            self._base = self._paid = end
            self._content = True
            return delta
        self._owed.append((start, end, delta.model_text, delta.model_text == text))
        if not body:
            self._held = held + text
            return None
        self._held = text[len(body) :]
        self._base = end - len(self._held)
        self._content = True
        return TextDelta(text=held + body, model_text=self._pay(self._base))

    def sentence(self, raw: str) -> tuple[bool, TextDelta | None]:
        """Place a sentence the divider cut; say if it is this stream's, return what it frees."""
        since = self._since[0] if len(self._since) == 1 else "".join(self._since)
        at = -1 if not raw else 0 if since.startswith(raw) else since.find(raw)
        if at < 0:
            return False, None
        begin = self._start + at
        if at:
            self._dead.append((self._start, begin))
        self._start = cut = begin + len(raw)
        rest = since[at + len(raw) :]
        self._since = [rest] if rest else []
        if cut == self._base:
            self._content = False
        elif cut > self._base:
            self._cuts.append(cut)
        return True, self._advance(final=False, before=cut)

    def end(self) -> TextDelta | None:
        """End the stretch: release what is held but trailing whitespace, and all model text."""
        out = self._advance(final=True)
        self._held = ""
        self._base = self._start = self._end
        self._cuts, self._dead, self._since = [], [], []
        self._content = self._started = False
        return out

    def _advance(self, final: bool, before: int | None = None) -> TextDelta | None:
        """Release what is decided (only visible text ``before`` a cut); ``final``: all.

        Sentences the divider cuts in one go arrive one after another; text after a cut
        waits for the next delta, when all of them are in.
        """
        shown: list[str] = []
        self._open_at = -1
        while self._held:
            step = self._step(final, before)
            if step is None:
                break
            text, used, visible = step
            shown.append(text)
            self._consume(used, visible)
        text = "".join(shown)
        if not (text or final):
            return None
        model = self._pay(self._base)
        return TextDelta(text=text, model_text=model) if text or model else None

    def _consume(self, used: int, visible: bool) -> None:
        """Drop ``used`` released characters from the held text."""
        self._base = base = self._base + used
        self._held = self._held[used:]
        if visible:
            self._content = True
        cuts = self._cuts
        while cuts and cuts[0] <= base:
            if cuts.pop(0) == base:
                self._content = False
        if self._dead:
            self._dead = [span for span in self._dead if span[1] > base]

    def _step(self, final: bool, before: int | None) -> tuple[str, int, bool] | None:
        """Decide the next visible run and what comes before it: (text, used, visible)."""
        held = self._held
        segments = self._segments()
        last = len(segments) - 1
        region: Region = []
        for index, (lo, hi) in enumerate(segments):
            piece = held[lo:hi].rstrip() if final and index == last else held[lo:hi]
            tags, open_at, nested = parse(self._tags, piece, index == last and not final)
            x = first_visible(piece, tags, open_at)
            if x is None:
                if open_at < len(piece):
                    self._open_at = self._base + lo + open_at
                    return None
                region.append((piece, tags))
                continue
            region.append((piece[:x], [tag for tag in tags if tag[1] <= x]))
            at = self._base + lo + x
            if before is not None and at >= before:
                return None
            if not final and not self._certain(at, region):
                return None
            stop = min([open_at, *(start for start, _ in tags if start > x)])
            if (run := self._long_space.search(piece, x, stop)) is not None:
                stop = run.start()
            for start, end in nested:
                if (
                    not final
                    and x <= start < stop
                    and self._base + lo + end - self._start > self._low
                ):
                    stop = start
                    break
            if stop == x:
                return None
            end = x + len(piece[x:stop].rstrip())
            return shown(self._tags, region, self._content, True) + piece[x:end], lo + end, True
        if not final:
            return None
        return shown(self._tags, region, self._content, False), len(held), False

    def _segments(self) -> list[Span]:
        """Split the held text at known sentence starts, leaving out what no sentence holds."""
        base = self._base
        if not self._cuts and not self._dead:
            return [(0, len(self._held))]
        spans: list[Span] = []
        lo = self._live(base) - base
        for cut in self._cuts:
            spans.append((lo, cut - base))
            lo = self._live(cut) - base
        spans.append((lo, len(self._held)))
        return spans

    def _live(self, pos: int) -> int:
        """Return ``pos``, moved past whitespace the divider dropped there."""
        for start, end in self._dead:
            if start <= pos < end:
                return end
        return pos

    def _certain(self, at: int, region: Region) -> bool:
        """Say whether no later cut can change what ``region`` before ``at`` shows."""
        if at < self._start or at - self._start < self._low:
            return True
        if sum(len(raw) for raw, _ in region) >= self._low:
            return False
        return not any(spans for _, spans in region) or cut_proof(region)

    def _pay(self, upto: int) -> str:
        """Return the model text of everything released before ``upto`` not yet handed on."""
        parts: list[str] = []
        owed, paid = self._owed, self._paid
        while owed:
            start, end, model, aligned = owed[0]
            skip = paid - start if aligned and paid > start else 0
            if end <= upto:
                parts.append(model[skip:])
                owed.popleft()
                continue
            if aligned and upto > start + skip:
                parts.append(model[skip : upto - start])
            break
        self._paid = max(paid, upto)
        return "".join(parts)


# The regions ``TagStream`` decides with.
type Span = tuple[int, int]
type Region = list[tuple[str, list[Span]]]
"""Whitespace and tags before a visible character: one part per sentence, with tag spans."""

_VISIBLE = re.compile(r"\S")
_CUTTABLE = re.compile(r"[\s,，、;；:：]")
"""Where the length cap may cut inside a tag's name."""
_LEFT = "a"
_RIGHT = "b"
"""Visible stand-ins for the text on either side of a region."""


def parse(tags: ActionTags, text: str, open_end: bool) -> tuple[list[Span], int, list[Span]]:
    """Parse one sentence's text as ``ActionTags.extract`` would.

    Return the known tags, where a candidate that more text could still close starts
    (``len(text)`` if none, or if ``open_end`` is false), and bracketed text with a bracket
    inside it (a cut inside it would free the inner tag).
    """
    size = len(text)
    if not tags.active or ("[" not in text and "【" not in text):
        return [], size, []
    pending = OPEN_TAG.search(text) if open_end else None
    open_at = size if pending is None else pending.start()
    known: list[Span] = []
    nested: list[Span] = []
    for found in TAG.finditer(text):
        if found.start() > open_at:
            break
        if tags.name(found) is not None:
            known.append(found.span())
        elif "[" in (inner := found.group()[1:]) or "【" in inner:
            nested.append(found.span())
        if open_at < found.end():
            pending = OPEN_TAG.search(text, found.end())
            open_at = size if pending is None else pending.start()
    return known, open_at, nested


def first_visible(text: str, tags: list[Span], limit: int) -> int | None:
    """Return where the first character outside ``tags`` and whitespace is, before ``limit``."""
    pos = 0
    for start, end in tags:
        if (found := _VISIBLE.search(text, pos, start)) is not None:
            return found.start()
        pos = end
    found = _VISIBLE.search(text, pos, limit)
    return None if found is None else found.start()


def shown(tags: ActionTags, region: Region, content: bool, before_visible: bool) -> str:
    """Return what ``region`` shows, by ``ActionTags.extract`` on each sentence's part.

    ``content``: the first part's sentence showed something before the region;
    ``before_visible``: a visible character follows the last part in its sentence. A
    sentence of tags alone shows nothing.
    """
    out: list[str] = []
    last = len(region) - 1
    for index, (raw, spans) in enumerate(region):
        left = index == 0 and content
        right = index == last and before_visible
        if not (left or right):
            continue
        if not spans:
            out.append(raw)
            continue
        cleaned = tags.extract((_LEFT if left else "") + raw + (_RIGHT if right else ""))[0]
        out.append(cleaned[1 if left else 0 : len(cleaned) - 1 if right else len(cleaned)])
    return "".join(out)


def cut_proof(region: Region) -> bool:
    """Say whether no sentence cut inside ``region`` could change what it shows.

    True when every whitespace run around its tags is the same and no tag's name holds a
    place the length cap could cut at.
    """
    runs: set[str] = set()
    for raw, spans in region:
        pos = 0
        for start, end in spans:
            if _CUTTABLE.search(raw, start, end):
                return False
            runs.add(raw[pos:start])
            pos = end
        runs.add(raw[pos:])
    return len(runs) <= 1
