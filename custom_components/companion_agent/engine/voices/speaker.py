"""Who speaks a turn, as the host says: a recognised voice, a signed-in person, the household."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

type Role = Literal["adult", "child"]
"""How a person was enrolled: only an adult's voice approves a held call that asks for one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Speaker:
    """Who the host says speaks a turn, and whether their word approves a held call.

    A heard turn (``heard`` True) was spoken: ``user_id`` is the person whose voiceprint it
    matched, None when it matched nobody well enough (the household). A typed turn
    (``heard`` False) is the signed-in person's: the host vouches for ``user_id``.
    ``may_approve`` is the host's verdict: an enrolled adult's voice at the approval
    threshold, or a signed-in person not enrolled as a child.
    """

    heard: bool
    user_id: str | None = None
    name: str | None = None
    role: Role | None = None
    score: float | None = None
    """The cosine of the turn's voice against the recognised person's voiceprint."""
    may_approve: bool = False


HOUSEHOLD_VOICE = Speaker(heard=True)
"""A spoken turn whose voice matched nobody: it runs as the household and approves nothing."""
