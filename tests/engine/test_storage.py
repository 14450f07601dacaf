"""Durable conversation storage on real files."""

from __future__ import annotations

import json
from pathlib import Path

from custom_components.companion_agent.engine.messages import AssistantMessage, UserMessage
from custom_components.companion_agent.engine.storage import JsonConversationStorage


async def test_turns_survive_a_new_instance(tmp_path: Path) -> None:
    """What one instance wrote, the next one reads back in order."""
    first = JsonConversationStorage.for_conversation(tmp_path, "conv/1")
    await first.append_turn("Turn on the light", "Done.")
    await first.append_turn("Thanks", "You're welcome.")
    await first.flush()
    again = JsonConversationStorage.for_conversation(tmp_path, "conv/1")
    assert await again.load() == [
        UserMessage(content="Turn on the light"),
        AssistantMessage(content="Done."),
        UserMessage(content="Thanks"),
        AssistantMessage(content="You're welcome."),
    ]
    assert again.path.parent == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conv_1.json"]  # noqa: ASYNC240


async def test_only_the_last_turns_are_kept(tmp_path: Path) -> None:
    """The file keeps at most max_turns exchanges."""
    storage = JsonConversationStorage(tmp_path / "c.json", max_turns=2)
    for n in range(5):
        await storage.append_turn(f"q{n}", f"a{n}")
    await storage.flush()
    data = json.loads((tmp_path / "c.json").read_text())
    assert [t["user"] for t in data["turns"]] == ["q3", "q4"]


async def test_corrupt_file_is_moved_aside_and_reported(tmp_path: Path) -> None:
    """A corrupt file does not stop the conversation: it starts empty and is kept aside."""
    path = tmp_path / "c.json"
    path.write_text('{"version": 1, "turns": [{"user": 3')
    reports: list[tuple[Path, Path]] = []
    storage = JsonConversationStorage(
        path, on_corrupt=lambda bad, moved: reports.append((bad, moved))
    )
    assert await storage.load() == []
    assert len(reports) == 1
    assert reports[0][0] == path
    assert reports[0][1].read_text() == '{"version": 1, "turns": [{"user": 3'
    await storage.append_turn("hello", "hi")
    await storage.flush()
    assert json.loads(path.read_text())["turns"][0]["user"] == "hello"
