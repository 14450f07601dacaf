"""Lasting instructions: "from now on…", "以后…", "remember that…", "记住…".

The person asking the companion to keep something in mind must not depend on a model
answering well: the matcher is small, multilingual and model-free (its cues are in
``topics``), and the person's own sentence is written as the conclusion under the topic
``topics.statement_topic`` gives it — a known attribute of the person (``self/name``), or a
note of its own, so two different instructions never replace each other. A later
instruction on the same topic supersedes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..chars import clean_text, strip_format
from .retrieval.topics import CUE, statement_topic

MAX_INSTRUCTION_CHARS = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class LastingInstruction:
    """A standing request found in the person's words: its topic and the sentence."""

    topic: str
    text: str


def lasting_instruction(text: str) -> LastingInstruction | None:
    """Return the lasting instruction in ``text``, or None when it holds none."""
    clean = clean_text(strip_format(text), MAX_INSTRUCTION_CHARS, one_line=True)
    match = CUE.search(clean)
    if match is None:
        return None
    topic = statement_topic(clean[match.end() :])
    if not topic:
        return None
    return LastingInstruction(topic=topic, text=clean)
