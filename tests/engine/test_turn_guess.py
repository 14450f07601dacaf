"""A turn's guesses of its first sentence, through the real runner, the openai SDK and the
local streaming server: what ``Turn.guessed_speech()`` yields while the model holds back
the token that decides the sentence, and that a host line spoken first is not guessed over.
(A persona whose plugins transform the output guesses nothing: ``PluginSet.transforms``,
in ``plugins/test_loader.py``.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from custom_components.companion_agent.engine.events import SentenceOutput
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.speech.turn_speech import SpeechGuess
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from custom_components.companion_agent.engine.turn.sink import TurnSink
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, finish, persona, start

TIMEOUT = 10.0


async def test_the_first_sentence_is_guessed_while_the_model_holds_the_next_token(
    tmp_path: Path, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    released = asyncio.Event()
    llm_server.script(Reply.held("[happy] Good morning.", " Tea is ready.", until=released))
    turn = start(TurnRunner(), persona(chat_model), Conversations(tmp_path).request("Hi"))
    items = asyncio.create_task(finish(turn))
    speech = turn.guessed_speech()

    assert await asyncio.wait_for(anext(speech), TIMEOUT) == SpeechGuess("Good morning.")
    assert not released.is_set()
    released.set()
    rest = [item async for item in speech]
    await items

    assert rest == ["Good morning.", "Tea is ready."]


async def test_no_guess_stands_once_a_sentence_was_said() -> None:
    """A host line spoken first (an apology, a notice) is sentence 0: no guess replaces it."""
    sink = TurnSink("t1", 1e9, on_played=lambda _r: None, on_cut=lambda _h, _o: None)
    said = SentenceOutput(display_text="One moment.", tts_text="One moment.")
    sink.put(said)  # queued: the host has not taken it yet
    sink.guess("Good morning.")
    first: asyncio.Future[str | SpeechGuess] = asyncio.ensure_future(anext(sink.guessed_speech()))
    await asyncio.sleep(0)  # the voice reads before the host takes anything

    assert await anext(sink.take()) == said
    assert await asyncio.wait_for(first, TIMEOUT) == "One moment."
