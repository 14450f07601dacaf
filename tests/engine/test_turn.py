"""The turn handle: cancel, deadline, played, and what is stored whatever ends a turn.

Every turn runs through the real openai SDK against the local streaming server and stores
its history in a real exchange store (one SQLite file).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from custom_components.companion_agent.engine.events import (
    Heard,
    Interrupted,
    Played,
    SentenceOutput,
    TextDelta,
    ToolCallEvent,
    TurnOutcome,
)
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ChatMessage,
    ToolMessage,
)
from custom_components.companion_agent.engine.plugins import TurnContext
from custom_components.companion_agent.engine.tools.claims import ChangeClaims
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.limits import TurnLimits
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.support.exchanges import open_exchanges
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.turns import PROFILE, Conversations, finish, persona, run, start

SLOW = 0.05
STREAMING = replace(PROFILE, claims=ChangeClaims(enabled=False))
"""A persona whose text is shown as it streams: no claim check holds a sentence's text."""


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


def slow_text(*pieces: str) -> Reply:
    """Return a reply whose pieces arrive one every ``SLOW`` seconds."""
    return Reply(chunks=tuple(TextChunk(piece, SLOW) for piece in pieces))


def clock_tool(
    log: list[str], gate: asyncio.Event | None = None, started: asyncio.Event | None = None
) -> Tool:
    """Return a tool that tells the time, after ``gate`` opens if one is given."""

    async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Log the start, wait for the gate, answer."""
        log.append("start")
        if started is not None:
            started.set()
        if gate is not None:
            await gate.wait()
        log.append("end")
        return {"time": "12:00"}

    return Tool(spec=ToolSpec(name="get_time", description="Tell the time"), handler=handler)


class Listener:
    """A hook that logs what it is told after a turn and after playback."""

    plugin_id = "memory"

    def __init__(self) -> None:
        """Start with an empty log."""
        self.log: list[str] = []
        self.done = asyncio.Event()

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Read nothing."""
        return None

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Add nothing."""
        return None

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Log the outcome and what was said."""
        self.log.append(f"after {ctx.outcome}: {assistant_text}")
        self.done.set()

    async def on_after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext
    ) -> None:
        """Log that playback finished."""
        self.log.append(f"played {ctx.outcome}: {assistant_text}")


def sent_messages(server: LLMServer, request: int) -> list[dict[str, object]]:
    """Return the messages of one request the model server received."""
    messages = server.requests[request]["messages"]
    assert isinstance(messages, list)
    return messages


async def test_cancel_mid_sentence_stores_only_what_was_shown(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Cancelled after the first pieces: nothing more comes out, and only those are stored."""
    listener = Listener()
    llm_server.script(slow_text("The weather ", "today is ", "sunny and ", "warm. Later ", "rain."))
    runner = TurnRunner()
    who = persona(chat_model, hooks=[listener])
    turn = start(runner, who, talk.request("Weather?"))
    items = turn.items()
    seen: list[str] = []
    async for item in items:
        if isinstance(item, TextDelta):
            seen.append(item.text)
        if "today is" in "".join(seen):
            turn.cancel("the person spoke")
            break
    after_cancel = [i async for i in items]
    result = await turn.result
    assert after_cancel == [Interrupted(reason="the person spoke")]  # why the items ended
    assert result.outcome == "interrupted"
    assert result.reason == "the person spoke"
    assert result.shown.rstrip() == "The weather today is"
    assert result.spoken == ""
    await who.plugins.hooks.drain(5)
    assert listener.log == [f"after interrupted: {result.shown}"]
    messages = await talk.history("conv-1").load()
    assert [type(m).__name__ for m in messages] == ["UserMessage", "AssistantMessage"]
    assert isinstance(messages[1], AssistantMessage)
    mark = "[the person interrupted you here and did not hear the rest]"
    assert messages[1].content == f"{result.shown}\n{mark}"
    assert "sunny" not in messages[1].content
    assert llm_server.aborted == 1


async def test_cancel_lets_a_running_tool_finish_and_records_it(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A call already at its tool finishes and is stored; the next round never starts."""
    log: list[str] = []
    gate, started = asyncio.Event(), asyncio.Event()
    llm_server.script(Reply.tool_calls(("call_1", "get_time", "{}")), Reply.text("It is noon."))
    turn = start(
        TurnRunner(),
        persona(chat_model),
        talk.request("Time?", tools=[clock_tool(log, gate, started)]),
    )
    items = turn.items()
    async for item in items:
        if isinstance(item, ToolCallEvent) and item.status == "running":
            break
    async with asyncio.timeout(5):
        await started.wait()
    turn.cancel("the person spoke")
    assert [i async for i in items] == [Interrupted(reason="the person spoke")]
    gate.set()
    result = await turn.result
    assert result.outcome == "interrupted"
    assert log == ["start", "end"]
    assert len(llm_server.requests) == 1
    messages = await talk.history("conv-1").load()
    tool = next(m for m in messages if isinstance(m, ToolMessage))
    assert json.loads(tool.content) == {"time": "12:00"}


async def test_cancel_takes_effect_before_any_further_item(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Items already queued but not taken are dropped: the host never sees them."""
    chunks = (TextChunk("One. Two. "), TextChunk("Three. "), TextChunk("Four.", 5.0))
    llm_server.script(Reply(chunks=chunks))
    turn = start(TurnRunner(), persona(chat_model), talk.request("Count"))
    await asyncio.sleep(0.3)  # "One. Two. Three." has arrived and waits in the queue
    turn.cancel()
    assert [i async for i in turn.items()] == [Interrupted(reason="cancelled")]
    result = await turn.result
    assert result.outcome == "interrupted"
    assert result.shown == ""
    stored = await talk.history("conv-1").load()
    assert isinstance(stored[1], AssistantMessage)
    assert stored[1].content.startswith("[the person interrupted you")


async def test_deadline_ends_the_turn_with_a_spoken_line(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A model that stalls past the turn's deadline: timed_out, and the person hears why."""
    llm_server.script(Reply(chunks=(TextChunk("Let me ", 0.0), TextChunk("think.", 5.0))))
    who = persona(chat_model, profile=replace(PROFILE, turn_deadline=0.5))
    loop = asyncio.get_running_loop()
    started = loop.time()
    turn = start(TurnRunner(), who, talk.request("Hard question"))
    assert started <= turn.deadline - 0.5 <= loop.time()  # the deadline the host can see
    done = await finish(turn)
    assert turn.deadline <= loop.time() < turn.deadline + 2.5  # ...is when the turn ended
    assert done.result.outcome == "timed_out"
    assert done.text == "Let me\nSorry, that took too long, so I stopped."
    assert done.sentences[-1].tts_text == "Sorry, that took too long, so I stopped."
    stored = await talk.history("conv-1").load()
    assert isinstance(stored[1], AssistantMessage)
    assert stored[1].content == f"{done.result.shown}\n[this answer ran out of time here]"
    assert done.result.shown.rstrip() == "Let me"


async def test_played_runs_after_playback_once(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """played() twice: the hook runs exactly once, with what was said."""
    listener = Listener()
    who = persona(chat_model, hooks=[listener])
    llm_server.script(Reply.text("Hello there."))
    turn = start(TurnRunner(), who, talk.request("Hi"))
    turn.played()  # before the turn ended: runs when it ends
    done = await finish(turn)
    turn.played()
    await who.plugins.hooks.drain(5)
    assert done.result.spoken == "Hello there."
    assert listener.log == ["after complete: Hello there.", "played complete: Hello there."]


async def test_played_while_the_turn_streams_is_an_item_in_its_place(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Audio done before the text (a tool round ahead): a Played item, then the rest."""
    listener = Listener()
    who = persona(chat_model, hooks=[listener], profile=STREAMING)
    llm_server.script(slow_text("Hello. ", "More ", "later."))
    turn = start(TurnRunner(), who, talk.request("Hi"))
    items = turn.items()
    first = await anext(items)
    turn.played()
    turn.played()  # once
    rest = [item async for item in items]
    played = [index for index, item in enumerate(rest) if isinstance(item, Played)]
    assert isinstance(first, TextDelta)
    assert played == [0]  # right after what the host had taken
    assert rest[0] == Played(heard=Heard.everything())
    assert any(isinstance(item, TextDelta) and "later" in item.text for item in rest[1:])
    await turn.result
    await who.plugins.hooks.drain(5)
    assert listener.log == [
        "after complete: Hello. More later.",
        "played complete: Hello. More later.",
    ]


async def test_played_never_runs_for_a_silent_turn(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A turn that produced no speech never calls on_after_playback."""
    listener = Listener()
    who = persona(chat_model, hooks=[listener])
    llm_server.script(Reply.text("🎉"))
    turn = start(TurnRunner(), who, talk.request("Party!"))
    done = await finish(turn)
    turn.played()
    await who.plugins.hooks.drain(5)
    assert done.result.spoken == ""
    assert listener.log == ["after complete: 🎉"]


async def test_cut_answer_reaches_the_next_turn_marked(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A stream that breaks: the next turn's request shows the answer marked as cut."""
    llm_server.script(
        Reply(chunks=(TextChunk("The kitchen "), TextChunk("light is ")), cut_after=2),
        Reply.text("Sorry about that."),
    )
    runner, who = TurnRunner(), persona(chat_model)
    first = await run(runner, who, talk.request("Kitchen?"))
    assert first.result.outcome == "cut"
    await run(runner, who, talk.request("Again?"))
    assistant = [m for m in sent_messages(llm_server, 1) if m["role"] == "assistant"]
    assert assistant == [
        {
            "role": "assistant",
            "content": "The kitchen light is \n[the connection to you broke off here; "
            "the person heard only the text above]",
        }
    ]


async def test_tool_calls_and_results_are_stored_and_sent_next_turn(
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    talk: Conversations,
    snapshot: SnapshotAssertion,
) -> None:
    """The next request shows the model which tools it called and what they returned."""
    log: list[str] = []
    llm_server.script(
        Reply.tool_calls(("call_1", "get_time", "{}")),
        Reply.text("It is noon."),
        Reply.text("You are welcome."),
    )
    runner, who = TurnRunner(), persona(chat_model)
    await run(runner, who, talk.request("Time?", tools=[clock_tool(log)]))
    await run(runner, who, talk.request("Thanks", tools=[clock_tool(log)]))
    assert sent_messages(llm_server, 2) == snapshot
    with closing(sqlite3.connect(talk.folder / "exchanges.db")) as db:
        (raw,) = db.execute("SELECT turn FROM exchanges ORDER BY rowid LIMIT 1").fetchone()
    first = json.loads(raw)
    assert first["messages"][0]["tool_calls"][0]["name"] == "get_time"
    assert first["outcome"] == "complete"


async def test_ids_that_once_shared_a_file_stay_apart(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """``alice's room`` and ``alice_s_room`` are two conversations, each with its own turns."""
    runner, who = TurnRunner(), persona(chat_model)
    await run(runner, who, talk.request("My secret is 42", conversation_id="alice's room"))
    await run(runner, who, talk.request("Hello", conversation_id="alice_s_room"))
    second = json.dumps(sent_messages(llm_server, 1))
    assert "My secret is 42" not in second
    assert await talk.store.counts() == {"p1": 2}
    assert [t.user for t in await talk.turns("alice's room")] == ["My secret is 42"]


async def test_prune_deletes_only_idle_conversations(tmp_path: Path) -> None:
    """Conversations idle past the retention are deleted; recent ones stay."""
    store = open_exchanges(tmp_path / "exchanges.db")
    long_ago = time.time() - 31 * 86400
    for conversation_id, when in (("old", long_ago), ("new", time.time())):
        await store.conversation("p1", conversation_id).append(StoredTurn(user="hi", time=when))
    assert await store.prune(30 * 86400) == 1
    assert await store.conversation("p1", "old").turns() == []
    assert [t.user for t in await store.conversation("p1", "new").turns()] == ["hi"]


async def test_held_call_approved_after_100_other_conversations_runs_once(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """The held call carries its own runner: no cache of recent turns can lose it."""
    log: list[str] = []
    runner = TurnRunner(limits=TurnLimits(turns_per_minute=0))
    confirm_tool = replace(clock_tool(log), policy="confirm")
    llm_server.script(Reply.tool_calls(("call_1", "get_time", "{}")), Reply.text("Shall I?"))
    await run(runner, persona(chat_model), talk.request("Time?", tools=[confirm_tool]))
    (token,) = runner.guard.confirmations.tokens.live()
    for number in range(100):
        await run(runner, persona(chat_model), talk.request("Hi", conversation_id=f"c{number}"))
    confirmations = runner.guard.confirmations
    result = await confirmations.resolve(token.token_id, approve=True, user_id="alice")
    assert result.status == "executed"
    assert log == ["start", "end"]
    with pytest.raises(Exception, match="already used"):
        await confirmations.resolve(token.token_id, approve=True, user_id="alice")
    assert log == ["start", "end"]


class SlowHistory:
    """A history whose append waits for a gate, so a cancel can arrive while it stores."""

    def __init__(self) -> None:
        """Start closed."""
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()
        self.turns: list[StoredTurn] = []

    async def load(self) -> list[ChatMessage]:
        """Return no earlier turns."""
        return []

    async def append(self, turn: StoredTurn) -> None:
        """Wait for the gate, then keep the turn."""
        self.entered.set()
        await self.gate.wait()
        self.turns.append(turn)

    async def amend(self, trace_id: str, heard: str, outcome: TurnOutcome = "interrupted") -> bool:
        """Amend nothing."""
        return False


async def test_a_cancel_while_the_turn_is_stored_still_ends_it(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Cancelled while storing: the turn is still stored whole and its result still comes."""
    history = SlowHistory()
    llm_server.script(Reply.text("Done."))
    turn = start(TurnRunner(), persona(chat_model), replace(talk.request("Go"), history=history))
    async with asyncio.timeout(5):
        await history.entered.wait()
    turn.cancel("too late")
    history.gate.set()
    async with asyncio.timeout(5):
        result = await turn.result
    assert result.outcome == "complete"
    assert [t.outcome for t in history.turns] == ["complete"]


async def test_cancel_listeners_hear_a_cancel_once_and_a_finished_turn_never(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """What must stop with a turn (its audio) hears the cancel, once, with its reason."""
    heard: list[str] = []
    llm_server.script(Reply(chunks=(TextChunk("One. "), TextChunk("Two.", 5.0))))
    turn = start(TurnRunner(), persona(chat_model), talk.request("Count"))
    turn.on_cancel(heard.append)
    items = turn.items()
    await anext(items)  # the turn is under way
    turn.cancel("the person spoke")
    turn.cancel("again")
    turn.on_cancel(heard.append)  # too late: the turn is cancelled already
    await turn.result
    assert heard == ["the person spoke"]

    llm_server.script(Reply.text("Done."))
    finished = start(TurnRunner(), persona(chat_model), talk.request("Again"))
    finished.on_cancel(heard.append)
    await finish(finished)
    finished.cancel("after the end")
    assert heard == ["the person spoke"]


async def test_a_turn_cancelled_before_it_ran_still_ends(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A cancel in the same breath as the start: the result comes, the items end."""
    llm_server.script(Reply.text("Hello."))
    turn = start(TurnRunner(), persona(chat_model), talk.request("Hi"))
    turn.cancel("the person spoke")
    result = await asyncio.wait_for(turn.result, 5)
    assert result.outcome == "interrupted"
    assert [item async for item in turn.items()] == [Interrupted(reason="the person spoke")]


async def test_heard_first_marks_the_finished_turn_interrupted_after_its_sentences(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Spoken over after its first sentence: the stored turn keeps that sentence, marked."""
    listener = Listener()
    who = persona(chat_model, hooks=[listener])
    llm_server.script(Reply.text("It is *sunny*. Take a hat. And water."))
    runner = TurnRunner()
    turn = start(runner, who, talk.request("Weather?"))
    turn.played(Heard.first(1))  # the turn still runs: ignored
    done = await finish(turn)
    assert [s.tts_text for s in done.sentences] == ["It is sunny.", "Take a hat.", "And water."]
    assert turn.first_spoken_at is not None

    turn.played(Heard.first(3))  # all three heard: nothing to amend
    turn.played(Heard.first(1))
    turn.played(Heard.first(0))  # once per turn
    await runner.drain(5)

    assert done.result.outcome == "complete"  # the turn ended well; only its record changes
    stored = await talk.history("conv-1").turns()
    assert [(t.trace_id, t.outcome) for t in stored] == [("trace", "interrupted")]
    assert stored[0].messages == (AssistantMessage(content="It is *sunny*."),)
    await who.plugins.hooks.drain(5)
    assert listener.log == ["after complete: It is *sunny*. Take a hat. And water."]


async def test_a_turn_cut_mid_sentence_keeps_only_what_was_spoken_even_if_all_was_heard(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Cut while the model wrote its second sentence: its first words were never spoken.

    The one sentence spoken was heard (``Heard.first(1)`` of one), yet the words shown after
    it are not kept: nobody heard them.
    """
    llm_server.script(slow_text("It is sunny. ", "Take a h", "at with you."))
    runner = TurnRunner()
    turn = start(runner, persona(chat_model, profile=STREAMING), talk.request("Weather?"))
    shown = ""
    async for item in turn.items():
        if isinstance(item, TextDelta):
            shown += item.text
            if "Take a h" in shown:
                turn.cancel("the person spoke")
    result = await turn.result
    assert result.outcome == "interrupted"
    assert result.spoken == "It is sunny."  # one sentence spoken
    turn.played(Heard.first(1))
    await runner.drain(5)
    (stored,) = await talk.history("conv-1").turns()
    assert stored.outcome == "interrupted"
    assert stored.messages == (AssistantMessage(content="It is sunny."),)


async def test_heard_first_none_keeps_no_text(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Spoken over before any sentence could be heard: the stored turn keeps no text."""
    llm_server.script(Reply.text("One. Two."))
    runner = TurnRunner()
    turn = start(runner, persona(chat_model), talk.request("Count"))
    await finish(turn)
    turn.played(Heard.first(0))
    await runner.drain(5)
    messages = await talk.history("conv-1").load()
    assert messages[-1] == AssistantMessage(
        content="[the person interrupted you here and did not hear the rest]"
    )


async def test_a_cancel_for_a_failed_device_stores_the_turn_as_failed(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """The host could not deliver the answer: stored as failed, so the next turn knows."""
    llm_server.script(slow_text("Hello ", "there. ", "More."))
    turn = start(TurnRunner(), persona(chat_model, profile=STREAMING), talk.request("Hi"))
    async for item in turn.items():
        if isinstance(item, TextDelta):
            turn.cancel("the speaker is gone", failed=True)
    result = await turn.result
    assert (result.outcome, result.reason) == ("failed", "the speaker is gone")
    messages = await talk.history("conv-1").load()
    assert isinstance(messages[-1], AssistantMessage)
    assert messages[-1].content.endswith("[you could not finish this answer]")


async def test_heard_undelivered_marks_the_finished_turn_failed_with_nothing_heard(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Its audio failed after the turn ended: stored as failed, so the next turn knows."""
    llm_server.script(Reply.text("One. Two."))
    runner = TurnRunner()
    turn = start(runner, persona(chat_model), talk.request("Count"))
    turn.played(Heard.undelivered())  # still running: ignored
    done = await finish(turn)
    assert done.result.outcome == "complete"
    turn.played(Heard.undelivered())
    turn.played(Heard.first(0))  # once per turn: the first word stands
    await runner.drain(5)
    (stored,) = await talk.history("conv-1").turns()
    assert (stored.outcome, stored.messages) == ("failed", ())
    messages = await talk.history("conv-1").load()
    assert messages[-1] == AssistantMessage(content="[you could not finish this answer]")


async def test_speech_follows_the_sentences_the_host_takes_for_every_reader(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Readers start from the first sentence whenever they begin, and end with the turn."""
    llm_server.script(slow_text("Good morning. ", "[joy] The tea ", "is ready."))
    turn = start(TurnRunner(), persona(chat_model), talk.request("Morning?"))
    early = asyncio.create_task(_read(turn.speech()))
    items = turn.items()
    async for item in items:
        if isinstance(item, SentenceOutput):
            break
    late = asyncio.create_task(_read(turn.speech()))  # begins after the first sentence
    rest = [item async for item in items]
    await turn.result

    said = ["Good morning.", "The tea is ready."]  # the profile's tags are never spoken
    assert await early == said
    assert await late == said
    assert [i.tts_text for i in rest if isinstance(i, SentenceOutput)] == said[1:]
    assert await _read(turn.speech()) == said  # after the end too


async def test_speech_stops_at_once_when_the_turn_is_cancelled(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    llm_server.script(slow_text("One. ", "Two. ", "Three. ", "Four."))
    turn = start(TurnRunner(), persona(chat_model), talk.request("Count."))
    said: list[str] = []
    heard = asyncio.Event()

    async def read() -> None:
        async for text in turn.speech():
            said.append(text)
            heard.set()

    reader = asyncio.create_task(read())
    items = turn.items()
    async for item in items:
        if isinstance(item, SentenceOutput):
            await asyncio.wait_for(heard.wait(), 5)  # the reader has it
            turn.cancel("the person spoke")
    await asyncio.wait_for(reader, 5)
    assert said == ["One."]
    assert turn.cancelled == "the person spoke"
    assert await _read(turn.speech()) == []  # a cancelled turn says no more


async def _read(speech: AsyncIterator[str]) -> list[str]:
    """Return everything a speech reader yields."""
    return [text async for text in speech]
