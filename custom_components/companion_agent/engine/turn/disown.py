""" "That wasn't me": the words that disown a turn taken as someone's, and what disowning did.

A voice can be taken for the wrong person. When a person then says "that wasn't me" (or
"那不是我") as a whole utterance, the turn answers before any model runs: the
conversation's last exchange that was stored as theirs becomes the household's, with the
memories it fed (``Engine.disown``), and a spoken line says so, or says there was nothing
of theirs to take back. The words are matched whole, after folding case, width and
punctuation, so "that wasn't me who left the door open" is an ordinary request.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..tools.contract import ToolContext

DISOWN_PHRASES: frozenset[str] = frozenset(
    {
        "that wasn't me",
        "that was not me",
        "wasn't me",
        "it wasn't me",
        "it was not me",
        "那不是我",
        "不是我说的",
        "刚才不是我",
        "刚才那不是我",
        "那不是我说的",
    }
)
"""Whole utterances that disown the last exchange taken as the speaker's (folded form)."""

_NOT_WORD = re.compile(r"[^\w']+")
_WASNT = re.compile(r"\bwasnt\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Disowned:
    """What "that wasn't me" did: the exchange it moved (its trace id) and memories moved."""

    trace_id: str | None = None
    """The turn that is now the household's; None: nothing of the person's was found."""
    memories: int = 0
    """How many of the person's memories that turn fed went to the household."""

    @property
    def moved(self) -> bool:
        """Say whether an exchange was taken back from the person."""
        return self.trace_id is not None


type Disown = Callable[[ToolContext], Awaitable[Disowned]]
"""Take the conversation's last exchange stored as ``ctx.user_id``'s back (the engine's)."""


def folded(text: str) -> str:
    """Return ``text`` as the phrases are written: NFKC, lower case, one space, no marks."""
    plain = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'").casefold()
    return _WASNT.sub("wasn't", " ".join(_NOT_WORD.sub(" ", plain).split()))


def is_disowning(text: str) -> bool:
    """Say whether ``text`` is, whole, a person saying the last turn was not theirs."""
    said = folded(text)
    if len(said) > 40:
        return False
    return said in DISOWN_PHRASES or said.replace(" ", "") in DISOWN_PHRASES
