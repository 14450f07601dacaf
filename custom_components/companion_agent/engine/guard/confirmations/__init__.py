"""Confirmations: held calls, their tokens, and the person's yes or no.

``held_calls`` holds a risky call, runs or declines it on the person's word, expires it;
``tokens`` binds it to the tool, arguments, user and conversation, single use, on a timer;
``consent`` matches the person's answer against its word lists; ``notices`` is all that
the model and the turn hear of it, and carries what nobody has heard yet from one engine
to the next.
"""

from .held_calls import ConfirmationListener, Confirmations, ConfirmationStatus, ConsentReply
from .notices import UNRUN_REASONS, KeptNotices, TurnConfirmations, read_kept, write_kept
from .tokens import ConfirmationResult, ConfirmationToken

__all__ = [
    "UNRUN_REASONS",
    "ConfirmationListener",
    "ConfirmationResult",
    "ConfirmationStatus",
    "ConfirmationToken",
    "Confirmations",
    "ConsentReply",
    "KeptNotices",
    "TurnConfirmations",
    "read_kept",
    "write_kept",
]
