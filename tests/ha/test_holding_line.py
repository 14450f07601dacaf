"""A slow tool through a real HA: the persona says one holding line instead of dead air.

A text pipeline (intent → tts) runs our agent on the scripted model server, with our voice
speaking through the recording proxy in front of the real wyoming-piper. The house offers
one tool through an LLM API of its own: it checks the cellar, slowly (it would take 8 s;
the test lets it finish once it has heard what it waits for) or quickly (0.3 s). The
persona is the shipped default profile: its line comes after 1.5 s.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import voluptuous as vol
from homeassistant.components import conversation
from homeassistant.components.assist_pipeline.pipeline import (  # requirements_test.txt
    PipelineEventType,
)
from homeassistant.core import HomeAssistant
from homeassistant.helpers import chat_session, llm
from homeassistant.util.json import JsonObjectType

from custom_components.companion_agent.agent.ha_tools import HassTurnTools
from custom_components.companion_agent.engine.json_types import JSONObject
from tests.ha.common import SetupCompanion, assistant_text, stored_turns
from tests.ha.common.pipelines import (
    SATELLITE_OUT,
    WAV_OUT,
    TextRun,
    Voice,
    async_voice,
    start_text_run,
)
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0
SLOW = 8.0
QUICK = 0.3
DEADLINE = 2.0
"""The line reaches the voice before this many seconds after the call began."""
API = "cellar_house"
LINE = "One moment, I'm checking the cellar sensor."
FIRST_CLAUSE = "One moment,"
BUSY_LINE = "One moment, please."
"""The default profile's plain line: what a busy model server gets."""
ANSWER = "The cellar is dry."
CALL = ("call_cellar", "check_cellar", '{"name": "cellar sensor"}')


class CellarTool(llm.Tool):
    """Checks the cellar: slowly (until let go, ``SLOW`` s at most) or in ``QUICK`` s."""

    name = "check_cellar"
    description = "Check whether the cellar is dry."
    parameters = vol.Schema({vol.Optional("name"): str})

    def __init__(self, *, slow: bool) -> None:
        """Start not yet called."""
        self.slow = slow
        self.began: float | None = None
        self.called = asyncio.Event()
        self.let_go = asyncio.Event()

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Take the time it takes; answer that the cellar is dry."""
        self.began = asyncio.get_running_loop().time()
        self.called.set()
        if not self.slow:
            await asyncio.sleep(QUICK)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.let_go.wait(), SLOW)
        return {"dry": True}


class CellarHouse(llm.API):
    """An LLM API offering only the cellar tool."""

    def __init__(self, hass: HomeAssistant, tool: CellarTool) -> None:
        """Register under ``API``."""
        super().__init__(hass=hass, id=API, name="Cellar house")
        self.tool = tool

    async def async_get_api_instance(self, llm_context: llm.LLMContext) -> llm.APIInstance:
        """Return the one tool."""
        return llm.APIInstance(api=self, api_prompt="", llm_context=llm_context, tools=[self.tool])


async def cellar_voice(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
    tool: CellarTool,
) -> Voice:
    """Set up our agent and voice on a pipeline, the persona on the cellar's API."""
    llm.async_register_api(hass, CellarHouse(hass, tool))
    return await async_voice(hass, setup_companion, proxy, monkeypatch, llm_apis=[API])


async def chat_log_of(hass: HomeAssistant, flight: TextRun) -> list[conversation.Content]:
    """Return the ChatLog of the run's conversation."""
    (end,) = [e for e in flight.events if e.type is PipelineEventType.INTENT_END]
    assert end.data is not None
    conversation_id = end.data["intent_output"]["conversation_id"]
    with (
        chat_session.async_get_chat_session(hass, conversation_id) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        return list(chat_log.content)


def assistant_contents(content: list[conversation.Content]) -> list[str]:
    """Return the text of each assistant message in a ChatLog."""
    return [c.content or "" for c in content if isinstance(c, conversation.AssistantContent)]


async def test_a_slow_tool_gets_one_holding_line_spoken_shown_and_stored(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tool = CellarTool(slow=True)
    voice = await cellar_voice(hass, setup_companion, proxy, monkeypatch, tool)
    llm_server.script(Reply.tool_calls(CALL), Reply.text(ANSWER))
    flight = start_text_run(hass, voice.pipeline, "Is the cellar dry?", timeout=TIMEOUT)

    await asyncio.wait_for(tool.called.wait(), TIMEOUT)
    assert tool.began is not None
    waited = asyncio.get_running_loop().time() - tool.began
    await asyncio.wait_for(proxy.wait_asked(1), DEADLINE - waited)
    assert proxy.texts == [FIRST_CLAUSE]  # the reply's first clause goes first, as ever
    await asyncio.wait_for(proxy.wait_asked(2), TIMEOUT)
    assert " ".join(proxy.texts) == LINE  # then the rest, while the tool still runs
    assert not tool.let_go.is_set()
    tool.let_go.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert " ".join(proxy.texts) == f"{LINE} {ANSWER}"  # each once
    assert parts
    calling, answering = assistant_contents(await chat_log_of(hass, flight))
    assert calling.strip() == LINE  # with the call it was said during
    assert answering == ANSWER
    await voice.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert assistant_text(turn) == f"{LINE}\n{ANSWER}"
    assert "One moment" not in str(llm_server.requests[1]["messages"])  # the model never hears it


async def test_a_busy_model_server_is_told_out_loud_while_it_is_still_busy(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """503, 503, then the answer: the plain line reaches the voice before the answer is asked."""
    voice = await cellar_voice(hass, setup_companion, proxy, monkeypatch, CellarTool(slow=False))
    llm_server.script(Reply(status=503), Reply(status=503), Reply.text(ANSWER))
    flight = start_text_run(hass, voice.pipeline, "Is the cellar dry?", timeout=TIMEOUT)

    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)
    assert proxy.texts == [FIRST_CLAUSE]
    assert len(llm_server.requests) < 3  # spoken while the server was still answering 503
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert parts
    assert " ".join(proxy.texts) == f"{BUSY_LINE} {ANSWER}"  # each once
    assert assistant_contents(await chat_log_of(hass, flight)) == [f"{BUSY_LINE}\n{ANSWER}"]
    await voice.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert assistant_text(turn) == f"{BUSY_LINE}\n{ANSWER}"
    assert "One moment" not in str(llm_server.requests[-1]["messages"])


async def test_a_quick_tool_gets_no_holding_line(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tool = CellarTool(slow=False)
    voice = await cellar_voice(hass, setup_companion, proxy, monkeypatch, tool)
    llm_server.script(Reply.tool_calls(CALL), Reply.text(ANSWER))
    flight = start_text_run(hass, voice.pipeline, "Is the cellar dry?", timeout=TIMEOUT)
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert tool.called.is_set()
    assert proxy.texts == [ANSWER]  # no line, only the answer
    assert parts
    assert assistant_contents(await chat_log_of(hass, flight)) == ["", ANSWER]
    await voice.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert assistant_text(turn) == ANSWER


def holding_hint_target(
    tools: HassTurnTools, name: str, args: JSONObject
) -> tuple[str, str | None]:
    """Return the kind of a converted tool's hint and the target it reads from ``args``."""
    (tool,) = [t for t in tools.tools() if t.tool_id == name]
    assert tool.holding is not None
    target = tool.holding.target(args) if tool.holding.target is not None else None
    return tool.holding.kind, target


class CameraSnapshot(llm.Tool):
    """A camera integration's own tool (as 2026.10 names its integration)."""

    name = "camera__snapshot"
    integration = "camera"
    description = "Take a snapshot."
    parameters = vol.Schema({vol.Optional("entity_id"): str})

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Answer nothing."""
        return {}


async def test_has_tools_name_their_target_for_the_line(hass: HomeAssistant) -> None:
    """An intent names what it acts on (name, else area, else floor); a camera tool its name."""
    hass.states.async_set("camera.porch", "idle", {"friendly_name": "Porch camera"})
    context = llm.LLMContext(
        platform="companion_agent",
        context=None,
        language="en",
        assistant="conversation",
        device_id=None,
    )
    api = llm.APIInstance(
        api=CellarHouse(hass, CellarTool(slow=False)),
        api_prompt="",
        llm_context=context,
        tools=[CellarTool(slow=False), CameraSnapshot()],
    )
    tools = HassTurnTools(hass, api)

    assert holding_hint_target(tools, "check_cellar", {"name": "cellar sensor"}) == (
        "home",
        "cellar sensor",
    )
    assert holding_hint_target(tools, "check_cellar", {"name": "all", "area": "Cellar"}) == (
        "home",
        "Cellar",
    )
    assert holding_hint_target(tools, "check_cellar", {"floor": "Basement"}) == (
        "home",
        "Basement",
    )
    assert holding_hint_target(tools, "check_cellar", {}) == ("home", None)
    assert holding_hint_target(tools, "camera__snapshot", {"entity_id": "camera.porch"}) == (
        "camera",
        "Porch camera",
    )
    assert holding_hint_target(tools, "camera__snapshot", {"camera": "camera.porch"}) == (
        "camera",
        "Porch camera",
    )
    assert holding_hint_target(tools, "camera__snapshot", {"name": "Porch"}) == ("camera", "Porch")
    assert holding_hint_target(tools, "camera__snapshot", {"entity_id": "camera.gone"}) == (
        "camera",
        None,
    )


BYTES_PER_SECOND = 22050 * 2
"""The WAV our voice gives this run: en_US-joe-medium, 22.05 kHz, 16-bit mono."""


def longest_dry_spell(arrivals: list[tuple[float, int]], until: float) -> float:
    """Return the longest time, until ``until``, a device playing the audio as it came had none."""
    ends: float | None = None
    longest = 0.0
    for at, size in arrivals:
        if ends is not None:
            longest = max(longest, at - ends)
        ends = max(at, ends if ends is not None else at) + size / BYTES_PER_SECOND
    return max(longest, until - ends) if ends is not None else until


@pytest.mark.parametrize("output", [WAV_OUT, SATELLITE_OUT], ids=["as made", "converted by HA"])
async def test_the_line_opens_has_stream_which_never_runs_dry_while_the_tool_runs(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
    *,
    output: dict[str, str | int],
) -> None:
    """The call came before any text: HA opens its TTS stream on the line, not on the answer.

    From then on the audio leaving HA keeps coming while the tool runs (the voice hands on
    silence once the line has played), so a satellite never waits seconds for more. Where
    HA converts the stream for a satellite (its ffmpeg lets nothing out before about five
    seconds of audio came in), the line still leaves HA at once.
    """
    loop = asyncio.get_running_loop()
    tool = CellarTool(slow=True)
    voice = await cellar_voice(hass, setup_companion, proxy, monkeypatch, tool)
    llm_server.script(Reply.tool_calls(CALL), Reply.text(ANSWER))
    flight = start_text_run(
        hass, voice.pipeline, "Is the cellar dry?", timeout=TIMEOUT, audio_output=output
    )
    await asyncio.wait_for(tool.called.wait(), TIMEOUT)
    arrivals: list[tuple[float, int]] = []

    async def read() -> None:
        """Read HA's stream as a satellite does, noting when each piece of audio came."""
        header = 44
        async for part in flight.audio():
            arrivals.append((loop.time(), max(0, len(part) - header)))
            header = max(0, header - len(part))

    reader = asyncio.create_task(read())
    await asyncio.sleep(6.0)  # the tool still runs
    now = loop.time()
    assert not tool.let_go.is_set()
    opened = [
        e
        for e in flight.events
        if e.type is PipelineEventType.INTENT_PROGRESS and (e.data or {}).get("tts_start_streaming")
    ]
    assert opened  # on the line, while the tool ran
    assert arrivals  # the line's audio left HA
    assert tool.began is not None
    assert arrivals[0][0] - tool.began < DEADLINE + 0.5
    assert longest_dry_spell(arrivals, now) < 1.0  # the line, then silence as it runs low
    tool.let_go.set()
    await asyncio.wait_for(reader, TIMEOUT)
    await flight.done()
    assert " ".join(proxy.texts) == f"{LINE} {ANSWER}"
