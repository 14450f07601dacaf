"""Lasting instructions found without a model; images never enter memory."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.memory.companion import (
    CompanionMemory,
    lasting_instruction,
)
from custom_components.companion_agent.engine.memory.models import MemoryScope
from custom_components.companion_agent.engine.memory.retrieval.topics import statement_topic
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.support.llm_server import LLMServer

SCOPE = MemoryScope(agent_id="p1", owner="user:alice", environment="test")
PIXELS = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQ"
    "ABpfZFQAAAAABJRU5ErkJggg=="
)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("From now on, call me Bob.", "self/name"),
        ("ok. Remember that my wife is Ann", "my wife is Ann"),
        ("Please don't forget that I hate jazz", "I hate jazz"),
        ("以后叫我小王", "self/name"),
        ("记住我不吃香菜。", "我不吃香菜"),
        ("你从现在开始说话慢一点", "说话慢一点"),
        ("Ab jetzt bitte auf Deutsch", "bitte auf Deutsch"),
        ("これからは敬語で話して", "敬語で話して"),
    ],
)
def test_a_lasting_instruction_is_found_in_several_languages_and_kept_whole(
    text: str, said: str
) -> None:
    """The cue is found, the sentence is kept whole, the topic is what it says after the cue.

    How to call the person is one attribute; anything else is a note of its own statement.
    """
    found = lasting_instruction(text)
    assert found is not None
    assert found.topic == (said if said.startswith("self/") else statement_topic(said))
    assert found.topic.startswith(("self/", "note/"))
    assert found.text == text


@pytest.mark.parametrize(
    "text",
    ["I remember that day", "我以后再说", "Turn on the light", "remember", "From now on"],
)
def test_memories_promises_commands_and_a_bare_cue_are_no_lasting_instructions(text: str) -> None:
    """Memories of the past, a later promise, a command or a bare cue are not instructions."""
    assert lasting_instruction(text) is None


async def test_images_never_enter_the_window_or_extraction(
    memory: CompanionMemory, llm_server: LLMServer
) -> None:
    """An inline image is replaced before the recent window and the memory model see it."""
    window = memory.window(SCOPE)
    view = memory.exchanges.conversation(SCOPE.agent_id, "c", owner=SCOPE.owner, windowed=True)
    await view.append(StoredTurn(user=f"Look: {PIXELS} and ![cat](http://x/cat.png)"))
    [turn] = await window.turns()
    assert turn.user == "Look: [image] and [image]"

    await memory.after_turn(SCOPE, f"What is this? {PIXELS}", "A cat.", source="c", model=None)
    assert await memory.wait_idle(5)
    sent = str(llm_server.structured_requests[0]["messages"])
    assert "base64" not in sent
    assert "[image]" in sent


async def test_the_outbox_file_holds_no_image_and_a_bounded_exchange(
    memory: CompanionMemory, llm_server: LLMServer
) -> None:
    """What waits on disk is already what extraction reads: no image, at most 4,000 chars."""
    await memory.outbox.close()  # nothing drains: the entry stays to be read
    await memory.after_turn(
        SCOPE, f"What is this? {PIXELS} " + "blah " * 3000, "A cat. " * 2000, source="c", model=None
    )
    [entry] = await memory.outbox.entries()
    assert "base64" not in str(entry.payload)
    assert len(str(entry.payload["user"])) <= 4000
    assert len(str(entry.payload["assistant"])) <= 4000
