"""The one retry policy: its backoff, what it counts as retryable, and its callers' rules."""

from __future__ import annotations

from dataclasses import replace

import httpx
import openai
import pytest

from custom_components.companion_agent.engine.errors import (
    LLMConnectionError,
    ToolDependencyError,
    ToolExecutionError,
)
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel, RoundEnd
from custom_components.companion_agent.engine.llm.adapter import MODEL_RETRY
from custom_components.companion_agent.engine.memory.outbox.outbox import OUTBOX_RETRY
from custom_components.companion_agent.engine.messages import UserMessage
from custom_components.companion_agent.engine.retry import NO_RETRY, RetryPolicy
from custom_components.companion_agent.engine.tools.registry import TOOL_RETRY
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer


def test_waits_grow_by_the_factor_up_to_the_cap() -> None:
    """0.5 s doubling, capped at 8 s; the outbox's 1 s doubling stops at 300 s."""
    policy = RetryPolicy(first_delay=0.5, factor=2.0, max_delay=8.0)
    assert [policy.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert [OUTBOX_RETRY.delay(n) for n in (1, 2, 9, 10, 40)] == [1.0, 2.0, 256.0, 300.0, 300.0]
    assert [TOOL_RETRY.delay(n) for n in (1, 2)] == [0.2, 0.5]


def test_jitter_only_shortens_a_wait_and_by_at_most_its_share() -> None:
    """Each wait lies between (1 - jitter) and 1 times the wait without jitter."""
    waits = [MODEL_RETRY.delay(2) for _ in range(500)]
    assert all(0.75 <= wait <= 1.0 for wait in waits)
    assert len(set(waits)) > 100  # they differ: clients do not come back together


def test_attempts_and_the_predicate_both_decide() -> None:
    """A try follows while tries are left and the error is retryable; None never runs out."""
    only_connection = RetryPolicy(
        attempts=3, retryable=lambda err: isinstance(err, ConnectionError)
    )
    assert only_connection.allows(1, ConnectionError())
    assert only_connection.allows(2, ConnectionError())
    assert not only_connection.allows(3, ConnectionError())
    assert not only_connection.allows(1, ValueError())
    assert RetryPolicy(attempts=None).allows(10_000, ValueError())
    assert not NO_RETRY.allows(1, ConnectionError())


def test_each_caller_retries_only_what_may_help() -> None:
    """Tools: dependency errors; the model: no answer, 429 and 5xx, never a refused key."""
    assert TOOL_RETRY.allows(1, ToolDependencyError("down"))
    assert TOOL_RETRY.allows(2, TimeoutError())
    assert not TOOL_RETRY.allows(1, ToolExecutionError("bug"))
    request = httpx.Request("POST", "http://model/v1/chat/completions")

    def status(code: int) -> openai.APIStatusError:
        """Return the SDK's error for an HTTP status."""
        response = httpx.Response(code, request=request)
        return openai.APIStatusError("failed", response=response, body=None)

    assert MODEL_RETRY.allows(1, status(500))
    assert MODEL_RETRY.allows(1, status(429))
    assert MODEL_RETRY.allows(1, openai.APIConnectionError(request=request))
    assert not MODEL_RETRY.allows(1, status(401))
    assert not MODEL_RETRY.allows(1, status(400))
    assert not MODEL_RETRY.allows(1, ValueError("not the SDK's"))
    assert not MODEL_RETRY.allows(3, status(500))


@pytest.mark.parametrize(
    "bad",
    [
        {"attempts": 0},
        {"first_delay": -1.0},
        {"factor": -2.0},
        {"jitter": 1.5},
    ],
)
def test_a_policy_that_cannot_be_followed_is_refused(bad: dict[str, float]) -> None:
    """No try at all, a negative wait or a jitter past the whole wait is an error."""
    with pytest.raises(ValueError, match="retry"):
        RetryPolicy(**bad)  # type: ignore[arg-type]


async def test_call_tries_again_with_the_waits_then_gives_up() -> None:
    """``call`` sleeps the policy's waits between tries and raises the last error."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        """Note the wait instead of waiting."""
        slept.append(seconds)

    tries: list[int] = []

    async def flaky() -> str:
        """Fail twice, then answer."""
        tries.append(len(tries))
        if len(tries) < 3:
            raise ConnectionError("reset")
        return "answer"

    policy = RetryPolicy(attempts=3, first_delay=0.1, factor=3.0, sleep=sleep)
    assert await policy.call(flaky) == "answer"
    assert slept == [0.1, pytest.approx(0.3)]
    tries.clear()
    with pytest.raises(ConnectionError):
        await replace(policy, attempts=2).call(flaky)
    assert len(tries) == 2
    tries.clear()
    with pytest.raises(ConnectionError):
        await replace(policy, retryable=lambda err: False).call(flaky)
    assert len(tries) == 1


async def test_the_model_s_retries_count_against_its_first_token_wait(
    llm_server: LLMServer,
) -> None:
    """A server that keeps failing is tried as the policy says, but only within the one wait."""
    hello = [UserMessage(content="Hi")]
    warm = OpenAIChatModel(LLMSettings(base_url=llm_server.url, model="m"))
    llm_server.script(Reply.text("Warm."))  # the SDK's first request builds its types: slow
    warmed = [item async for item in warm.stream_with_tools(hello, [])][-1]
    assert isinstance(warmed, RoundEnd)
    assert warmed.error is None
    await warm.aclose()
    patient = replace(MODEL_RETRY, attempts=20, first_delay=0.3, factor=1.0, jitter=0.0)
    settings = LLMSettings(
        base_url=llm_server.url, model="m", retry=patient, first_token_timeout=1.0
    )
    model = OpenAIChatModel(settings)
    llm_server.script(*(Reply.error(502) for _ in range(20)))
    items = [item async for item in model.stream_with_tools(hello, [])]
    await model.aclose()
    end = items[-1]
    assert isinstance(end, RoundEnd)
    assert isinstance(end.error, LLMConnectionError)  # the wait ran out: no answer in time
    # Tries at 0, 0.3, 0.6 and 0.9 s of the one second; never the twenty the policy allows.
    assert 2 <= len(llm_server.requests) - 1 <= 5
