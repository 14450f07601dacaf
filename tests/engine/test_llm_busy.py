"""A busy model server is told apart from one that does not answer.

A server that sent its headers (the stream is open) or answered 429/503 is there and busy:
it gets ``busy_timeout`` for its first token. One that never sends headers still fails
after ``first_token_timeout``, as unreachable. Real peers: the openai SDK against the
scripted server, and a loopback server that takes the request and never answers.
"""

from __future__ import annotations

import time

from custom_components.companion_agent.engine.errors import LLMBusyError, LLMConnectionError
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel, RoundEnd
from custom_components.companion_agent.engine.llm.roles import RoleChoice, role_settings
from custom_components.companion_agent.engine.messages import UserMessage
from custom_components.companion_agent.engine.retry import NO_RETRY
from custom_components.companion_agent.engine.turn.limits import turn_deadline
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer, SilentServer

FIRST_TOKEN = 1.0
BUSY = 5.0


def settings(url: str, *, busy: float = BUSY) -> LLMSettings:
    """Return settings with a short first-token wait and a longer busy wait."""
    return LLMSettings(
        base_url=url,
        model="test-model",
        retry=NO_RETRY,
        connect_timeout=0.5,
        first_token_timeout=FIRST_TOKEN,
        busy_timeout=busy,
    )


async def answer(model: OpenAIChatModel) -> tuple[str, RoundEnd, float]:
    """Stream one reply; return its text, its end and how long it took."""
    started = time.monotonic()
    text: list[str] = []
    end = RoundEnd()
    async for item in model.stream_with_tools([UserMessage(content="Hi")], []):
        if isinstance(item, str):
            text.append(item)
        elif isinstance(item, RoundEnd):
            end = item
    await model.aclose()
    return "".join(text), end, time.monotonic() - started


async def test_a_server_that_took_the_request_gets_the_busy_wait(llm_server: LLMServer) -> None:
    """Headers at once, the first token after three first-token waits: the answer comes."""
    llm_server.script(Reply(chunks=(TextChunk("Loaded, hello.", delay=FIRST_TOKEN * 3),)))
    text, end, took = await answer(OpenAIChatModel(settings(llm_server.url)))
    assert end.error is None
    assert text == "Loaded, hello."
    assert took >= FIRST_TOKEN * 3


async def test_a_busy_server_past_its_wait_is_slow_not_unreachable(
    llm_server: LLMServer,
) -> None:
    """Past the busy wait, the error says busy (the person hears "slow")."""
    llm_server.script(Reply(chunks=(TextChunk("Too late.", delay=4.0),)))
    text, end, took = await answer(OpenAIChatModel(settings(llm_server.url, busy=2.0)))
    assert text == ""
    assert isinstance(end.error, LLMBusyError)
    assert 2.0 <= took < 3.5


async def test_a_server_that_never_answers_fails_after_the_first_token_wait(
    socket_enabled: None,
) -> None:
    """TCP taken, no headers ever: unreachable, after the short wait, not the busy one."""
    async with SilentServer() as silent:
        text, end, took = await answer(OpenAIChatModel(settings(silent.url)))
        assert silent.connections >= 1
    assert text == ""
    assert isinstance(end.error, LLMConnectionError)
    assert not isinstance(end.error, LLMBusyError)
    assert took < BUSY / 2


async def test_a_refused_connection_fails_fast_as_unreachable(socket_enabled: None) -> None:
    """Nothing listening: unreachable at once."""
    async with SilentServer() as gone:
        url = gone.url
    _, end, took = await answer(OpenAIChatModel(settings(url)))
    assert isinstance(end.error, LLMConnectionError)
    assert took < BUSY / 2


async def test_busy_answers_are_asked_again_within_the_busy_wait(llm_server: LLMServer) -> None:
    """503 then 429 (overloaded, too many requests), then an answer: the answer comes."""
    llm_server.script(Reply(status=503), Reply(status=429), Reply.text("Now I can."))
    text, end, _ = await answer(OpenAIChatModel(settings(llm_server.url)))
    assert end.error is None
    assert text == "Now I can."
    assert len(llm_server.requests) == 3


async def test_busy_answers_past_the_wait_end_as_busy(llm_server: LLMServer) -> None:
    """A server that keeps answering 503 ends as busy (with its status), not unreachable."""
    llm_server.script(*(Reply(status=503) for _ in range(10)))
    _, end, took = await answer(OpenAIChatModel(settings(llm_server.url, busy=2.5)))
    assert isinstance(end.error, LLMBusyError)
    assert end.error.status == 503
    assert took < 5.0


def test_a_role_chooses_its_busy_wait_and_the_turn_allows_it() -> None:
    """A persona's role sets the busy wait; the turn's deadline grows by what it adds."""
    base = LLMSettings(base_url="http://127.0.0.1:1/v1", model="m")
    assert base.busy_timeout == 60.0
    chosen = role_settings(base, RoleChoice(busy_timeout=90.0), None)
    assert chosen.busy_timeout == 90.0
    assert role_settings(base, RoleChoice(), None).busy_timeout == 60.0
    assert turn_deadline(60.0, chosen) == 60.0 + 90.0 - chosen.first_token_timeout
    assert turn_deadline(60.0, None) == 60.0
    quick = LLMSettings(base_url="x", model="m", first_token_timeout=8.0, busy_timeout=5.0)
    assert turn_deadline(60.0, quick) == 60.0
