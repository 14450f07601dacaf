"""A slow model is not reported as an unreachable one, through a real HA.

A persona's chat role has a short first-token wait and a longer wait for a busy server
(its form's ``busy_timeout``). A server that took the request (headers sent) and is slow to
its first token gets the answer through; past the busy wait the person hears the "slow"
line. A server that holds the request without headers (a model loading) is busy too, and
the person hears "one moment" meanwhile; nothing listening is "unreachable" at once. Real
peers: HA through the harness, the scripted model server and a loopback server that never
answers, through the openai SDK.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from homeassistant.core import HomeAssistant

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_BUSY_TIMEOUT,
    CONF_FIRST_TOKEN_TIMEOUT,
)
from tests.ha.common import SetupCompanion, agents_by_title, ask, persona, speech, stored_turns
from tests.support.lines import spoken_lines
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer, SilentServer

FIRST_TOKEN = 1.0
"""The persona's first-token wait, short so the test is quick (the entry's is 8 s)."""
BUSY = 10.0
LOADING_FIRST_TOKEN = 4.0
"""Longer than the connect timeout (3 s): what it takes to know a silent server has the request."""
LOADING_BUSY = 6.0
ENGLISH = spoken_lines("en")
CHINESE = spoken_lines("zh-Hans")


def chat_role(**extra: object) -> dict[str, dict[str, object]]:
    """Return the persona's chat section: the short first-token wait, the busy wait."""
    return {"chat": {CONF_FIRST_TOKEN_TIMEOUT: FIRST_TOKEN, CONF_BUSY_TIMEOUT: BUSY, **extra}}


@pytest.fixture
async def silent_server(socket_enabled: None) -> AsyncIterator[SilentServer]:
    """Run a server that takes connections and requests and never answers."""
    async with SilentServer() as server:
        yield server


async def test_a_busy_model_answers_after_the_first_token_wait(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """The server took the request; its first word comes after 3.5 first-token waits.

    Meanwhile (from 2.5 s on) the person hears the persona's plain holding line.
    """
    entry = await setup_companion(persona("Ada", roles=chat_role()))
    agent = agents_by_title(hass, entry)["Ada"]
    llm_server.script(Reply(chunks=(TextChunk("Sorry for the wait, hello.", FIRST_TOKEN * 3.5),)))
    started = time.monotonic()
    result = await ask(hass, agent, "Hello?")
    assert speech(result) == "One moment, please. Sorry for the wait, hello."
    assert time.monotonic() - started >= FIRST_TOKEN * 3.5
    [stored] = stored_turns(hass)
    assert stored["outcome"] == "complete"


async def test_a_server_holding_the_request_like_a_loading_model_is_busy_and_told_so(
    hass: HomeAssistant, setup_companion: SetupCompanion, silent_server: SilentServer
) -> None:
    """The request taken, no headers (a model loading): "one moment" at once, then "slow".

    Past the connect timeout (3 s) the request is with a server that works on it, so the
    busy wait applies, and the person hears the plain holding line while it lasts.
    """
    roles = {
        "chat": {
            CONF_BASE_URL: silent_server.url,
            CONF_FIRST_TOKEN_TIMEOUT: LOADING_FIRST_TOKEN,
            CONF_BUSY_TIMEOUT: LOADING_BUSY,
        }
    }
    entry = await setup_companion(persona("Ada", roles=roles))
    agent = agents_by_title(hass, entry)["Ada"]
    started = time.monotonic()
    result = await ask(hass, agent, "Hello?")
    took = time.monotonic() - started
    assert silent_server.connections >= 1
    assert speech(result) == f"One moment, please. {ENGLISH.slow}"
    assert LOADING_BUSY <= took < LOADING_BUSY + 2.0
    [stored] = stored_turns(hass)
    assert (stored["outcome"], stored["reason"]) == (
        "failed",
        "the model server accepted the request but sent no token in time",
    )


async def test_a_model_server_not_listening_is_unreachable_at_once(
    hass: HomeAssistant, setup_companion: SetupCompanion, socket_enabled: None
) -> None:
    """Nothing listens: the unreachable line, fast, and no "one moment" first."""
    async with SilentServer() as gone:
        url = gone.url
    entry = await setup_companion(persona("Ada", roles=chat_role(**{CONF_BASE_URL: url})))
    agent = agents_by_title(hass, entry)["Ada"]
    started = time.monotonic()
    result = await ask(hass, agent, "Hello?")
    assert speech(result) == ENGLISH.unreachable
    assert time.monotonic() - started < FIRST_TOKEN + 2.0 < BUSY
    [stored] = stored_turns(hass)
    assert stored["outcome"] == "failed"


async def test_a_model_busy_past_its_wait_says_it_is_slow(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """Headers sent, no word within the busy wait: the "slow" line, in the person's language."""
    roles = {"chat": {CONF_FIRST_TOKEN_TIMEOUT: FIRST_TOKEN, CONF_BUSY_TIMEOUT: 2.0}}
    entry = await setup_companion(persona("Ada", roles=roles))
    agent = agents_by_title(hass, entry)["Ada"]
    llm_server.script(
        Reply(chunks=(TextChunk("too late", 30.0),)), Reply(chunks=(TextChunk("太晚了", 30.0),))
    )
    english = await ask(hass, agent, "Hello?")
    chinese = await ask(hass, agent, "你好？", language="zh-Hans")
    assert speech(english) == ENGLISH.slow != ENGLISH.unreachable
    assert speech(chinese) == CHINESE.slow != CHINESE.unreachable
    reasons = {str(turn["reason"]) for turn in stored_turns(hass)}
    assert reasons == {"the model server accepted the request but sent no token in time"}
