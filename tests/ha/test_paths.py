"""The paths a reader follows are short: a turn to the model, a sentence to Piper and back.

Each path is read from the real stack of a real HA run (the scripted model, Piper behind
the recording proxy), where the path ends, and continued through every task to where that
task was made (a task factory notes each task's parent and the stack that made it), so the
host's call into the package is on it too. What only pulls a stream as it flows (the output
stages between the loop and the ChatLog) is left out: it passes nothing down the path.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.llm import adapter
from custom_components.companion_agent.engine.speech import turn_speech, wyoming_connection
from tests.ha.common.pipelines import Voice, start_text_run
from tests.support.architecture_table import table_row
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.mp3 import mp3_frames

PACKAGE = Path(adapter.__file__).resolve().parents[2]
PULLING_STAGES = ("engine/pipeline/", "engine/turn/reply_check.py")
"""Stages that pull the reply out of the loop: the output side, not the way to the model."""
TURN_PATH = (
    "conversation.py",
    "engine/engine.py",
    "engine/turn/runner.py",
    "engine/turn/loop.py",
    "engine/llm/adapter.py",
)
"""The files a turn goes through to the model, host first (docs/architecture.md, walk a)."""
SPEECH_TO_PIPER = (
    "conversation.py",
    "tts.py",
    "engine/speech/turn_speech.py",
    "engine/speech/wyoming_tts.py",
    "engine/speech/wyoming_connection.py",
)
"""The files a turn's sentence goes through to Piper, from the agent's turn (walk a)."""
AUDIO_TO_HA = ("engine/speech/containers.py", "tts.py", "engine/speech/turn_speech.py")
"""The files the turn's audio goes through to HA's TTS stream, outermost (HA's read) first."""

type Origin = tuple[asyncio.Task[Any] | None, list[str]]


def ours(filename: str) -> str | None:
    """Return a file's path inside the package, or None when it is not the package's."""
    path = Path(filename).resolve()
    return path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else None


def stack_files(frame: FrameType | None) -> list[str]:
    """Return the package's files on the stack from ``frame`` out, innermost first."""
    files: list[str] = []
    while frame is not None:
        name = ours(frame.f_code.co_filename)
        if name is not None and not name.startswith(PULLING_STAGES):
            files.append(name)
        frame = frame.f_back
    return files


class Lineage:
    """Where each task was made: its parent task and the package's files on the stack then."""

    def __init__(self) -> None:
        """Start with no task noted."""
        self.made: dict[int, Origin] = {}

    def factory(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any
    ) -> asyncio.Task[Any]:
        """Note the new task's maker, then make it as the loop would."""
        self.made[id(coro)] = (asyncio.current_task(loop), stack_files(sys._getframe(1)))
        return asyncio.Task(coro, loop=loop, **kw)

    def path(self, end: str, frame: FrameType | None) -> tuple[str, ...]:
        """Return the files from the host's call to ``end``, each once, outermost first."""
        files = [end, *stack_files(frame)]
        task = asyncio.current_task()
        while task is not None:
            parent, made_at = self.made.get(id(task.get_coro()), (None, []))
            files.extend(made_at)
            task = parent
        return tuple(dict.fromkeys(reversed(files)))


@pytest.fixture
def lineage(hass: HomeAssistant) -> Iterator[Lineage]:
    """Note the maker of every task HA's loop starts during the test."""
    noted = Lineage()
    before = hass.loop.get_task_factory()
    hass.loop.set_task_factory(noted.factory)
    yield noted
    hass.loop.set_task_factory(before)


async def test_a_host_request_reaches_the_adapter_through_five_files(
    hass: HomeAssistant,
    setup_entry: MockConfigEntry,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    lineage: Lineage,
) -> None:
    """The adapter is reached from the conversation entity through the engine, runner and loop."""
    llm_server.script(Reply.text("Hello there."))
    seen: list[tuple[str, ...]] = []
    stream = adapter.OpenAIChatModel.stream_with_tools

    def watched(self: adapter.OpenAIChatModel, *args: Any, **kwargs: Any) -> Any:
        """Note the files on the way here, then stream as the adapter does."""
        seen.append(lineage.path("engine/llm/adapter.py", sys._getframe(1)))
        return stream(self, *args, **kwargs)

    monkeypatch.setattr(adapter.OpenAIChatModel, "stream_with_tools", watched)
    registry = er.async_get(hass)
    agent_id = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, setup_entry.entry_id)
        if e.domain == "conversation"
    )
    result = await conversation.async_converse(
        hass, "Hi", None, Context(), language="en", agent_id=agent_id
    )

    assert result.response.speech["plain"]["speech"] == "Hello there."
    assert seen == [TURN_PATH]


async def test_a_sentence_reaches_piper_and_its_audio_has_stream_through_six_files(
    hass: HomeAssistant,
    llm_server: LLMServer,
    voice: Voice,
    monkeypatch: pytest.MonkeyPatch,
    lineage: Lineage,
) -> None:
    """Our voice writes the sentence to Piper; HA's stream reads the audio back through two more."""
    llm_server.script(Reply.text("The kettle is on."))
    written: list[tuple[str, ...]] = []
    heard: list[tuple[str, ...]] = []
    write = wyoming_connection.WyomingConnection.write
    listen = turn_speech.TurnSpeech.listen

    async def watched_write(self: wyoming_connection.WyomingConnection, *events: Any) -> None:
        """Note the files on the way to Piper, then write as the connection does."""
        if any(event.type == "synthesize" for event in events):
            written.append(lineage.path("engine/speech/wyoming_connection.py", sys._getframe(1)))
        await write(self, *events)

    def watched_listen(self: turn_speech.TurnSpeech, *args: Any, **kwargs: Any) -> Any:
        """Note the files from HA's stream to the turn's audio, then listen as it does."""
        heard.append(lineage.path("engine/speech/turn_speech.py", sys._getframe(1)))
        return listen(self, *args, **kwargs)

    monkeypatch.setattr(wyoming_connection.WyomingConnection, "write", watched_write)
    monkeypatch.setattr(turn_speech.TurnSpeech, "listen", watched_listen)
    flight = start_text_run(hass, voice.pipeline, "Tea?", timeout=10.0, audio_output=None)
    audio = b"".join([part async for part in flight.audio()])
    await flight.done()

    assert len(mp3_frames(audio)) > 20  # the sentence, spoken: about a second of MP3
    assert written == [SPEECH_TO_PIPER]
    assert heard == [AUDIO_TO_HA]
    assert len(set(SPEECH_TO_PIPER) | set(AUDIO_TO_HA)) == 6


def test_the_architecture_table_counts_these_paths() -> None:
    """The closing table of docs/architecture.md gives the paths these tests read."""
    assert table_row("files on a turn's path to the model")[1] == str(len(TURN_PATH))
    speech = set(SPEECH_TO_PIPER) | set(AUDIO_TO_HA)
    row = "files on the speech path (a sentence to Piper, its audio to HA)"
    assert table_row(row)[1] == str(len(speech))
