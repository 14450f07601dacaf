"""A busy model server is told apart from one that does not answer.

A server that sent its headers (the stream is open), answered 429/503, or holds the request
past the connect timeout (a model loading sends no headers until its first token) is there
and busy: it gets ``busy_timeout`` for its first token, and the round yields one
``ServerWaiting`` so the turn can say "one moment". Nothing listening fails at once, as
unreachable. Real peers: the openai SDK against the scripted server, and a loopback server
that takes the request and never answers.
"""

from __future__ import annotations

import time

from custom_components.companion_agent.engine.errors import LLMBusyError, LLMConnectionError
from custom_components.companion_agent.engine.llm import (
    LLMSettings,
    OpenAIChatModel,
    RoundEnd,
    ServerWaiting,
)
from custom_components.companion_agent.engine.llm.adapter import WAITING_NOTICE_AFTER
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
    text, end, took, _ = await answer_noting_waits(model)
    return text, end, took


async def answer_noting_waits(
    model: OpenAIChatModel,
) -> tuple[str, RoundEnd, float, list[tuple[float, ServerWaiting, int]]]:
    """Stream one reply; also return each notice: when, what, and how much text came before."""
    started = time.monotonic()
    text: list[str] = []
    end = RoundEnd()
    waits: list[tuple[float, ServerWaiting, int]] = []
    async for item in model.stream_with_tools([UserMessage(content="Hi")], []):
        if isinstance(item, str):
            text.append(item)
        elif isinstance(item, ServerWaiting):
            waits.append((time.monotonic() - started, item, len(text)))
        elif isinstance(item, RoundEnd):
            end = item
    await model.aclose()
    return "".join(text), end, time.monotonic() - started, waits


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


async def test_a_server_that_holds_the_request_without_headers_is_busy_like_a_model_loading(
    socket_enabled: None,
) -> None:
    """TCP taken, the request read, no headers: a model loading (it writes nothing before).

    Past the connect timeout the request cannot still be connecting, so the server has it:
    the busy wait applies (not the first-token one), the round says it waits once, and the
    end is busy (the person hears "slow", not "can't reach").
    """
    async with SilentServer() as silent:
        text, end, took, waits = await answer_noting_waits(
            OpenAIChatModel(settings(silent.url, busy=3.5))
        )
        assert silent.connections >= 1
    assert text == ""
    assert isinstance(end.error, LLMBusyError)
    assert 3.5 <= took < 5.0
    assert [wait.status for _, wait, _ in waits] == [None]
    assert waits[0][0] >= WAITING_NOTICE_AFTER


async def test_a_busy_answer_is_noticed_at_once_and_once(llm_server: LLMServer) -> None:
    """503, 503, then the answer: one notice, carrying the status, before any text."""
    llm_server.script(Reply(status=503), Reply(status=503), Reply.text("Here I am."))
    text, end, _, waits = await answer_noting_waits(OpenAIChatModel(settings(llm_server.url)))
    assert end.error is None
    assert text == "Here I am."
    assert [(wait.status, before) for _, wait, before in waits] == [(503, 0)]
    assert waits[0][0] < 1.0


async def test_a_slow_first_token_after_headers_is_noticed_before_the_text(
    llm_server: LLMServer,
) -> None:
    """Headers at once, the first token late (a queued request): one notice, then the text."""
    late = WAITING_NOTICE_AFTER + 1.0
    llm_server.script(Reply(chunks=(TextChunk("Your turn now.", delay=late),)))
    text, end, took, waits = await answer_noting_waits(
        OpenAIChatModel(settings(llm_server.url, busy=late + 3.0))
    )
    assert end.error is None
    assert text == "Your turn now."
    assert took >= late
    assert [(wait.status, before) for _, wait, before in waits] == [(None, 0)]
    assert WAITING_NOTICE_AFTER <= waits[0][0] < late


async def test_a_quick_answer_has_no_notice(llm_server: LLMServer) -> None:
    """An answer well inside the wait is never announced as a wait."""
    llm_server.script(Reply(chunks=(TextChunk("Quick.", delay=0.3),)))
    text, end, _, waits = await answer_noting_waits(OpenAIChatModel(settings(llm_server.url)))
    assert (text, end.error, waits) == ("Quick.", None, [])


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
