"""``Engine``: one object built from frozen settings, driving real turns end to end.

Real peers throughout: the openai SDK against the local streaming server, the shipped
plugins and profiles, conversation and audit files and the embedded SQLite memory in a
temporary folder.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.engine import (
    AUDIT_FILE,
    ConfirmationStatus,
    ConfirmationToken,
    Engine,
    EngineSettings,
    MemoryProblem,
)
from custom_components.companion_agent.engine.errors import LLMConnectionError, LLMError
from custom_components.companion_agent.engine.guard.confirmations import read_kept
from custom_components.companion_agent.engine.guard.policy import PolicyRule
from custom_components.companion_agent.engine.memory.backends import MemoryConfig
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.history import file_name
from tests.engine.common import ask, finish
from tests.engine.plugins.samples import write_profile
from tests.support.chat_requests import user_text
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer


def stored(engine: Engine, conversation_id: str) -> list[str]:
    """Return the words stored on disk in one of ``p1``'s conversations (none: empty)."""
    path = engine.settings.data_dir / "exchanges.db"
    if not path.exists():
        return []
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT turn FROM exchanges WHERE persona = 'p1' AND conversation = ? ORDER BY rowid",
            (file_name(conversation_id),),
        ).fetchall()
    return [json.loads(raw)["user"] for (raw,) in rows]


async def test_an_engine_loads_its_library_and_builds_personas(
    tmp_path: Path, settings: EngineSettings
) -> None:
    """Profiles come from every root; an unknown one falls back; plugin problems are told."""
    write_profile(
        tmp_path / "user",
        "broken",
        '[plugins]\nenabled = ["mood_chat"]\n[plugins.mood_chat]\ncheck_minutes = 0\n',
    )
    engine = Engine(settings)
    assert engine.library.profiles.get("default") is None  # nothing read before start
    assert await engine.start() is None  # no memory asked for
    assert engine.memory is None
    assert engine.persona("p1", "no-such-profile").profile.id == "default"
    assert engine.problems == []
    broken = engine.persona("p2", "broken")
    assert broken.profile.id == "broken"
    assert [p.key for p in engine.problems] == ["plugins.mood_chat.check_minutes"]
    engine.persona("p2", "default")  # the persona's problems are replaced, not added
    assert engine.problems == []
    await engine.close()


async def test_a_persona_whose_profile_cannot_be_read_keeps_its_marks_or_holds_actions(
    tmp_path: Path, settings: EngineSettings, llm_server: LLMServer
) -> None:
    """Kept marks apply, never looser than the default profile's; with none kept, every
    call of a tool that does not only read waits for a yes; the model is told why."""
    write_profile(tmp_path / "user", "default", '[policy]\nlock = "confirm"\n')
    ran: list[str] = []

    async def switch_on(args: object, ctx: ToolContext) -> str:
        """Switch something on (in a log)."""
        ran.append("switch_on")
        return "on"

    async def look(args: object, ctx: ToolContext) -> str:
        """Look something up (in a log)."""
        ran.append("look")
        return "all quiet"

    engine = Engine(settings)
    await engine.start()
    kept = engine.persona("p1", "gone", kept={"light.bed": "confirm", "lock": "allow"})
    rules = kept.applied_rules
    assert (kept.profile.id, rules.origin) == ("default", "kept")
    assert rules.unread is not None
    assert rules.unread.path == tmp_path / "user" / "profiles" / "gone.toml"
    assert dict(rules.marks) == {"light.bed": "confirm", "lock": "confirm"}
    assert engine.persona("p1", "default", kept={"lock": "allow"}).applied_rules.origin == (
        "profile"
    )

    held = engine.persona("p2", "gone")
    assert held.applied_rules.origin == "none"
    tools = (
        Tool(spec=ToolSpec(name="switch_on", description="Switch on"), handler=switch_on),
        Tool(spec=ToolSpec(name="look", description="Look"), handler=look, read_only=True),
    )
    llm_server.script(
        Reply.tool_calls(("c1", "switch_on", "{}"), ("c2", "look", "{}")), Reply.text("Shall I?")
    )
    await finish(engine.start_turn(ask(held, "Switch it on", host_tools=tools)))
    assert ran == ["look"]
    [token] = engine.pending_confirmations()
    assert token.action["reasons"] == ["profile 'gone' (gone.toml) could not be read"]
    assert "no earlier copy of its rules is kept" in user_text(llm_server.requests[0])
    await engine.close()


async def test_turns_are_stored_under_their_persona_and_told_to_the_observer(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """A turn answers, is stored in the persona's folder; each round reaches the observer."""
    rounds: list[LLMError | None] = []
    engine = Engine(replace(settings, on_model_round=rounds.append))
    await engine.start()
    persona = engine.persona("p1", "default")
    llm_server.script(Reply.text("Hello there."))
    text, result = await finish(engine.start_turn(ask(persona, "Hi")))
    assert (text, result.outcome) == ("Hello there.", "complete")
    assert rounds == [None]
    await engine.flush()
    assert stored(engine, "conv-1") == ["Hi"]
    assert engine.usage.total.total_tokens > 0
    figures = await engine.diagnostics()
    assert figures["conversations"] == {"p1": 1}
    assert "default" in figures["profiles"]  # type: ignore[operator]
    await engine.close()

    down = Engine(
        replace(
            settings,
            model=replace(settings.model, base_url="http://127.0.0.1:9/v1"),
            on_model_round=rounds.append,
        )
    )
    await down.start()
    await finish(down.start_turn(ask(down.persona("p1", "default"), "Anyone?")))
    assert isinstance(rounds[-1], LLMConnectionError)
    await down.close()


async def test_a_held_call_uses_the_hosts_rules_ttl_and_listener(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """The host's rule holds the call; its listener hears it; ``confirm`` runs it once."""
    ran: list[str] = []
    heard: list[tuple[str, ConfirmationStatus]] = []

    async def unlock(args: object, ctx: ToolContext) -> str:
        """Unlock (in a log)."""
        ran.append(ctx.conversation_id)
        return "unlocked"

    def listener(token: ConfirmationToken, status: ConfirmationStatus) -> None:
        """Note each step of the held call."""
        heard.append((token.token_id, status))

    engine = Engine(
        replace(
            settings,
            rules=(PolicyRule.for_tool("unlock", "confirm"),),
            confirm_ttl=7.0,
            on_confirmation=listener,
        )
    )
    await engine.start()
    tool = Tool(spec=ToolSpec(name="unlock", description="Unlock the door"), handler=unlock)
    llm_server.script(Reply.tool_calls(("c1", "unlock", "{}")), Reply.text("Shall I?"))
    request = ask(engine.persona("p1", "default"), "Unlock", host_tools=(tool,))
    await finish(engine.start_turn(request))
    ((token_id, status),) = heard
    token = engine.pending_confirmation(token_id)
    assert status == "requested"
    assert token is not None
    assert token.expires_at - token.created_at == pytest.approx(7.0)
    assert ran == []
    assert (await engine.diagnostics())["pending_confirmations"] == 1
    result = await engine.confirm(token_id, approve=True, user_id="alice")
    assert (result.status, ran) == ("executed", ["conv-1"])
    assert engine.pending_confirmation(token_id) is None
    await engine.close()
    audit = (settings.data_dir / AUDIT_FILE).read_text(encoding="utf-8").splitlines()
    assert len(audit) >= 2  # held, then executed: written by close


@pytest.mark.parametrize("ending", ["close", "stop"])
async def test_a_held_call_ends_with_its_engine_and_the_next_engine_tells_its_person(
    settings: EngineSettings, llm_server: LLMServer, ending: str
) -> None:
    """Closed or stopped while a call waits: the listener and the audit hear it interrupted;
    the next engine on the same notices file tells Alice's next turn, not Bob's."""
    heard: list[ConfirmationStatus] = []
    ran: list[str] = []

    async def unlock(args: object, ctx: ToolContext) -> str:
        """Unlock (in a log)."""
        ran.append(ctx.conversation_id)
        return "unlocked"

    held = replace(
        settings,
        rules=(PolicyRule.for_tool("unlock", "confirm"),),
        on_confirmation=lambda _token, status: heard.append(status),
        notices_file=settings.data_dir / "entry.notices.json",
    )
    tool = Tool(spec=ToolSpec(name="unlock", description="Unlock the door"), handler=unlock)
    engine = Engine(held)
    await engine.start()
    llm_server.script(Reply.tool_calls(("c1", "unlock", "{}")), Reply.text("Shall I?"))
    await finish(
        engine.start_turn(ask(engine.persona("p1", "default"), "Unlock", host_tools=(tool,)))
    )
    await (engine.stop() if ending == "stop" else engine.close())
    assert heard == ["requested", "interrupted"]
    audit = [json.loads(line) for line in (settings.data_dir / AUDIT_FILE).read_text().splitlines()]
    assert [r["decision"] for r in audit] == ["confirm", "interrupted"]
    if ending == "stop":  # a host that unloads after stopping: nothing ends twice
        await engine.close()
        assert heard == ["requested", "interrupted"]

    later = Engine(held)
    await later.start()
    persona = later.persona("p1", "default")
    llm_server.script(Reply.text("Yes to what?"), Reply.text("It was cancelled."))
    bob = ask(persona, "yes", host_tools=(tool,))
    bob = replace(bob, context=replace(bob.context, user_id="bob"))
    await finish(later.start_turn(bob))
    assert "interrupted" not in str(llm_server.requests[-1]["messages"])
    await finish(later.start_turn(ask(persona, "yes", host_tools=(tool,))))
    told = str(llm_server.requests[-1]["messages"]).replace(" ", "")
    assert '"status":"interrupted"' in told
    assert '"performed":false' in told
    assert ran == []
    await later.close()
    assert held.notices_file is not None
    left = read_kept(held.notices_file)
    assert left.notices == ()  # everything was told
    assert len(left.interrupted) == 1  # the token is still known as interrupted


async def test_memory_feeds_a_persons_turns_but_not_the_homes(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """Embedded memory opens at start; a person's turn joins their window, a proactive not."""
    engine = Engine(replace(settings, memory=MemoryConfig()))
    assert await engine.start() is None
    memory = engine.memory
    assert memory is not None
    persona = engine.persona("p1", "default")
    scope = memory.scope("p1", "alice")
    llm_server.script(Reply.text("Noted."), Reply.text("Good morning!"))
    await finish(engine.start_turn(ask(persona, "My cat is Miso.")))
    home = ask(persona, "Greet them.", "proactive.kitchen", initiator="proactive")
    await finish(engine.start_turn(home))
    assert [t.user for t in await memory.window(scope).turns()] == ["My cat is Miso."]
    llm_server.script(Reply.text("Miso."))
    await finish(engine.start_turn(ask(persona, "My cat?", "conv-2")))
    assert "My cat is Miso." in str(llm_server.requests[-1]["messages"])  # the window
    await engine.close()
    assert engine.memory is None


async def test_memory_that_cannot_open_is_reported_and_left_off(
    settings: EngineSettings,
) -> None:
    """mem0 without embeddings cannot open: memory is off, the problem says why."""
    engine = Engine(replace(settings, memory=MemoryConfig(backend="mem0")))
    assert MemoryConfig(backend="mem0").requirements == ()  # nothing to install for it
    problem = await engine.start()
    assert isinstance(problem, MemoryProblem)
    assert not problem.opened
    assert "embeddings" in problem.detail
    assert engine.memory is None
    await engine.close()


async def test_an_answer_on_the_satellite_that_asked_continues_its_conversation(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """After ``expect_answer``, the satellite's next new conversation continues the asked one."""
    engine = Engine(replace(settings, memory=MemoryConfig()))
    await engine.start()
    persona = engine.persona("p1", "default")
    llm_server.script(Reply.text("Shall we water the plants?"), Reply.text("Great."))
    asked = ask(persona, "Ask about plants.", "proactive.kitchen", initiator="proactive")
    await finish(engine.start_turn(asked))
    engine.expect_answer("assist_satellite.kitchen", "proactive.kitchen")
    answer = ask(persona, "Yes please.", "ha-conv-9", satellite_id="assist_satellite.kitchen")
    await finish(engine.start_turn(answer))
    assert "Shall we water the plants?" in str(llm_server.requests[-1]["messages"])
    await engine.flush()
    assert stored(engine, "proactive.kitchen") == ["Ask about plants.", "Yes please."]
    assert stored(engine, "ha-conv-9") == []
    await engine.close()


async def test_close_lets_a_running_turn_end_and_writes_it(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """A turn still streaming at close is given its grace, then cancelled; it is stored."""
    engine = Engine(settings)
    await engine.start()
    llm_server.script(Reply(chunks=(TextChunk("Still here. More"), TextChunk(" to come.", 30.0))))
    turn = engine.start_turn(ask(engine.persona("p1", "default"), "Talk"))
    items = turn.items()
    await anext(items)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await engine.close()
    assert loop.time() - started < 10  # bounded by the grace, not the model
    result = await turn.result
    assert result.outcome == "interrupted"
    assert stored(engine, "conv-1") == ["Talk"]  # written before close returned


async def test_a_prune_that_runs_into_close_finishes_and_one_after_prunes_nothing(
    settings: EngineSettings,
) -> None:
    """A prune timer firing as the host unloads: the prune under way completes, none fails."""
    engine = Engine(settings)
    await engine.start()
    running = asyncio.create_task(engine.prune(0.0))
    await asyncio.sleep(0)  # the prune's one job is queued on the file's thread
    await engine.close()
    assert await running == 0
    assert await engine.prune(0.0) == 0
