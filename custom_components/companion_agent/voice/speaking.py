"""Which turn a TTS stream speaks: the agent marks its task, HA's TTS task inherits the mark.

HA hands a TTS entity only the text and the options (``TTSAudioRequest``): no conversation,
no context. But HA opens a turn's streaming TTS from inside the agent's turn: the pipeline
sets the stream's message from the agent's own ChatLog delta (``async_set_message_stream``
runs in the agent's task, and the task that makes the audio is created there), and an
asyncio task starts with a copy of its creator's context. So the agent sets
``SPEAKING_TURN`` while it streams into the ChatLog, ``start_chat`` while it sets its
stream's message, and the TTS stream sees the turn's trace id. A short answer is spoken
only after the agent returned (HA's TTS stage then sets the whole message): that message is
exactly the turn's speech, which finds it (``SpeechTurns.spoken``). No HA internals are read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

SPEAKING_TURN: ContextVar[str | None] = ContextVar("companion_speaking_turn", default=None)


@contextmanager
def speaking(trace_id: str) -> Iterator[None]:
    """Mark the current task (and the tasks it creates meanwhile) as speaking ``trace_id``."""
    token = SPEAKING_TURN.set(trace_id)
    try:
        yield
    finally:
        SPEAKING_TURN.reset(token)
